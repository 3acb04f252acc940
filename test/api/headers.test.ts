import { describe, expect, it } from 'vitest';
import { resumeSpreadMs } from '../../src/api/endpoint-status.ts';
import { ApiError } from '../../src/api/errors.ts';
import { checkHeaders, patchHeaders, withoutSensitive } from '../../src/api/headers.ts';

const refusal = (headers: Record<string, string>) => {
  try {
    checkHeaders(headers, ['body', 'headers']);
    return null;
  } catch (error) {
    expect(error).toBeInstanceOf(ApiError);
    return (error as ApiError).detail;
  }
};

describe('endpoint headers', () => {
  it('accepts tokens with safe values', () => {
    expect(
      refusal({ 'X-Api-Key': 'abc', 'x-trace': 'a b\tc', "X-Odd!#$%&'*+.^_`|~": 'caf\u00e9' }),
    ).toBeNull();
  });

  it('refuses injection, bad names and reserved names, naming the header', () => {
    expect(refusal({ 'X-A': 'a\r\nb' })).toEqual([
      { loc: ['body', 'headers', 'X-A'], msg: expect.any(String), type: 'value_error' },
    ]);
    const bad: Record<string, string>[] = [
      { 'X-A': 'a\nb' },
      { 'X-A': '\u0000' },
      { 'X(A)': 'x' },
      { 'webhook-id': 'x' },
      { 'SVIX-ID': 'x' },
      { Connection: 'close' },
    ];
    for (const headers of bad) expect(refusal(headers), JSON.stringify(headers)).not.toBeNull();
    expect(refusal({ 'X-A': '1', 'x-a': '2' })).not.toBeNull();
  });

  // undici refuses to send these: an endpoint holding one could never be delivered to.
  it.each(['Keep-Alive', 'upgrade', 'Expect', 'TE', 'Transfer-Encoding', 'Proxy-Connection', 'connection'])(
    'refuses the connection header %s',
    (name) => {
      expect(refusal({ [name]: 'x' })).toEqual([
        {
          loc: ['body', 'headers', name],
          msg: `header ${name} describes the connection, which Courier manages; it cannot be set`,
          type: 'value_error',
        },
      ]);
    },
  );

  it('patches case-insensitively and hides credentials', () => {
    expect(patchHeaders({ 'X-A': '1', 'X-B': '2' }, { 'x-a': '3' }, ['x-b'])).toEqual({ 'x-a': '3' });
    expect(withoutSensitive({ Authorization: 'Bearer x', 'X-A': '1' })).toEqual({
      headers: { 'X-A': '1' },
      sensitive: ['Authorization'],
    });
  });

  it('spreads resumed deliveries over held ÷ rate seconds, within [1 s, 5 min]', () => {
    expect(resumeSpreadMs(0, 10)).toBe(1_000);
    expect(resumeSpreadMs(100, 10)).toBe(10_000);
    expect(resumeSpreadMs(1_000_000, 1)).toBe(300_000);
  });
});
