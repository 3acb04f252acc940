import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { BodyCapture, captureHeaders } from '../../src/delivery/response-capture.ts';

describe('BodyCapture', () => {
  it('keeps a body that fits, across chunks, and asks for more', () => {
    const capture = new BodyCapture(16);
    expect(capture.push(Buffer.from('hello '))).toBe(false);
    expect(capture.push(Buffer.from('world'))).toBe(false);
    expect(capture.text()).toBe('hello world');
    expect(capture.truncated).toBe(false);
  });

  it('keeps a body of exactly the limit without calling it truncated', () => {
    const capture = new BodyCapture(4);
    expect(capture.push(Buffer.from('abcd'))).toBe(false);
    expect(capture.text()).toBe('abcd');
    expect(capture.truncated).toBe(false);
    expect(capture.push(Buffer.from('e'))).toBe(true); // one byte more proves it longer
    expect(capture.text()).toBe('abcd');
    expect(capture.truncated).toBe(true);
  });

  it('stops at the limit and reports that the rest should be discarded', () => {
    const capture = new BodyCapture(5);
    expect(capture.push(Buffer.from('abc'))).toBe(false);
    expect(capture.push(Buffer.from('defgh'))).toBe(true);
    expect(capture.text()).toBe('abcde');
  });

  it('is empty for an empty body', () => {
    expect(new BodyCapture(10).text()).toBe('');
  });

  it('drops a multi-byte character cut at the limit instead of mangling it', () => {
    const capture = new BodyCapture(5);
    capture.push(Buffer.from('abcd€')); // € is 3 bytes: only its first byte fits
    expect(capture.text()).toBe('abcd');
  });

  it('replaces invalid UTF-8 in a complete body', () => {
    const capture = new BodyCapture(10);
    capture.push(Buffer.from([0x61, 0xff, 0x62]));
    expect(capture.text()).toBe('a\uFFFDb');
  });

  it('never holds more than the limit, however the body is chunked', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 64 }),
        fc.array(fc.uint8Array({ maxLength: 40 })),
        (limit, chunks) => {
          const capture = new BodyCapture(limit);
          const all = Buffer.concat(chunks.map((c) => Buffer.from(c)));
          let stopped = false;
          for (const chunk of chunks) {
            if (capture.push(Buffer.from(chunk))) {
              stopped = true;
              break;
            }
          }
          expect(stopped).toBe(all.length > limit);
          expect(capture.truncated).toBe(all.length > limit);
          const text = capture.text();
          expect(Buffer.byteLength(text)).toBeLessThanOrEqual(limit * 3); // replacement chars are 3 bytes
          if (!stopped) expect(text).toBe(all.toString('utf8'));
        },
      ),
    );
  });
});

describe('captureHeaders', () => {
  it('flattens repeated headers with ", "', () => {
    expect(
      captureHeaders({ 'set-cookie': ['a=1', 'b=2'], 'retry-after': '30', skipped: undefined }, 4096),
    ).toEqual({
      'set-cookie': 'a=1, b=2',
      'retry-after': '30',
    });
  });

  it('stays under the byte limit but keeps small headers that follow a huge one', () => {
    const out = captureHeaders({ 'x-huge': 'x'.repeat(5000), 'retry-after': '120', location: '/next' }, 4096);
    expect(out).toEqual({ 'retry-after': '120', location: '/next' });
  });

  it('bounds the total whatever the receiver sends', () => {
    const many: Record<string, string> = {};
    for (let i = 0; i < 1000; i++) many[`x-header-${i}`] = 'v'.repeat(20);
    const out = captureHeaders(many, 4096);
    const size = Object.entries(out).reduce((sum, [k, v]) => sum + k.length + v.length + 4, 0);
    expect(size).toBeLessThanOrEqual(4096);
    expect(size).toBeGreaterThan(4000);
  });
});
