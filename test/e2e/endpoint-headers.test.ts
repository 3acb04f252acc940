import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp, createEndpoint, locs, startApi, type TestApi } from './support.ts';

describe('endpoint headers', () => {
  let api: TestApi;
  let path: string;
  beforeAll(async () => {
    api = await startApi();
    const appId = await createApp(api);
    const ep = await createEndpoint(api, appId, {
      url: 'https://example.com/x',
      headers: { 'X-First': '1' },
    });
    path = `/api/v1/app/${appId}/endpoint/${ep.id}/headers`;
  });
  afterAll(() => api.close());

  it('gets, replaces and patches headers', async () => {
    expect((await api.request('GET', path)).body).toEqual({ headers: { 'X-First': '1' }, sensitive: [] });
    const put = await api.request('PUT', path, { body: { headers: { 'X-A': 'a', 'X-B': 'b' } } });
    expect(put.status).toBe(204);
    expect(put.text).toBe('');
    expect((await api.request('GET', path)).body.headers).toEqual({ 'X-A': 'a', 'X-B': 'b' });
    const patch = await api.request('PATCH', path, {
      body: { headers: { 'x-a': 'A2', 'X-C': 'c' }, deleteHeaders: ['X-B'] },
    });
    expect(patch.status).toBe(204);
    expect((await api.request('GET', path)).body.headers).toEqual({ 'x-a': 'A2', 'X-C': 'c' });
  });

  it('never reads credentials back', async () => {
    await api.request('PATCH', path, { body: { headers: { Authorization: 'Bearer s3cret' } } });
    const res = await api.request('GET', path);
    expect(res.body).toEqual({ headers: { 'x-a': 'A2', 'X-C': 'c' }, sensitive: ['Authorization'] });
    expect(res.text).not.toContain('s3cret');
    await api.request('PATCH', path, { body: { headers: {}, deleteHeaders: ['authorization'] } });
  });

  it('refuses header injection, bad names and headers Courier sets', async () => {
    const bad: Record<string, string>[] = [
      { 'X-Evil': 'ok\r\nSet-Cookie: x=1' },
      { 'X-Evil': 'line\nbreak' },
      { 'X-Nul': 'a\u0000b' },
      { 'X-Bell': 'a\u0007b' },
      { 'Bad Name': 'x' },
      { 'X-Colon:': 'x' },
      { '': 'x' },
      { 'webhook-signature': 'v1,forged' },
      { 'Svix-Id': 'x' },
      { 'Content-Type': 'text/plain' },
      { Host: 'evil.example' },
      { 'Transfer-Encoding': 'chunked' },
      { 'X-Wide': 'caf\u00e9 \u2603' },
    ];
    for (const headers of bad) {
      for (const method of ['PUT', 'PATCH']) {
        const res = await api.request(method, path, { body: { headers } });
        expect(res.status, `${method} ${JSON.stringify(headers)}`).toBe(422);
        expect(locs(res)[0], JSON.stringify(headers)).toMatch(/^body\.headers/);
      }
    }
    // Every bad header in one answer, each with why; the good ones beside them are not written.
    const several = await api.request('PUT', path, {
      body: { headers: { 'X-Good': 'g', 'X-Evil': 'a\nb', 'Bad Name': 'x', 'x-good': 'again', Host: 'h' } },
    });
    expect(several.status, several.text).toBe(422);
    expect(several.body.detail.map((d: { loc: string[]; msg: string }) => [d.loc.join('.'), d.msg])).toEqual([
      [
        'body.headers.X-Evil',
        'header value must not contain CR, LF, NUL, other control characters or non-Latin-1 characters',
      ],
      ['body.headers.Bad Name', "header name must be an HTTP token (letters, digits, !#$%&'*+-.^_`|~)"],
      ['body.headers.x-good', 'header given twice (names are case-insensitive)'],
      ['body.headers.Host', 'header Host is set by Courier and cannot be overridden'],
    ]);
    expect((await api.request('GET', path)).body.headers).toEqual({ 'x-a': 'A2', 'X-C': 'c' });
    expect(locs(await api.request('PUT', path, { body: {} }))).toEqual(['body.headers']);
    expect(locs(await api.request('PUT', path, { body: { headers: { 'X-N': 5 } } }))).toEqual([
      'body.headers.X-N',
    ]);
  });
});
