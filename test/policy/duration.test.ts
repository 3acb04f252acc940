import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { formatDuration, parseDuration } from '../../src/policy/duration.ts';

describe('formatDuration', () => {
  it.each([
    [0, '0s'],
    [250, '250ms'],
    [5_000, '5s'],
    [60_000, '1m'],
    [270_000, '4m30s'],
    [3_600_000, '1h'],
    [5_400_000, '1h30m'],
    [259_200_000, '3d'],
    [90_061_001, '1d1h1m1s1ms'],
  ])('%i → %s', (ms, text) => {
    expect(formatDuration(ms)).toBe(text);
  });

  it.each([-1, 1.5, Number.NaN, Number.POSITIVE_INFINITY])('rejects %s', (ms) => {
    expect(() => formatDuration(ms)).toThrow(RangeError);
  });
});

describe('parseDuration', () => {
  it.each([
    ['90s', 90_000],
    ['1m', 60_000],
    ['1h', 3_600_000],
    ['3d', 259_200_000],
    ['250ms', 250],
    ['1.5h', 5_400_000],
    ['4m30s', 270_000],
    ['1h30m', 5_400_000],
    ['1.1s', 1_100],
    ['0s', 0],
    ['  5s\t', 5_000],
    ['1m1ms', 60_001],
  ])('%j → %i', (text, ms) => {
    expect(parseDuration(text)).toBe(ms);
  });

  it.each([
    ['', /empty/],
    ['   ', /empty/],
    ['90', /missing unit/],
    ['1.5', /missing unit/],
    ['-5s', /cannot be negative/],
    ['abc', /expected numbers with units/],
    ['5 s', /expected numbers with units/],
    ['5x', /expected numbers with units/],
    ['1e3s', /expected numbers with units/],
    ['.5s', /expected numbers with units/],
    ['s', /expected numbers with units/],
    ['1.0001ms', /whole number of milliseconds/],
    ['9007199254740992ms', /too large/],
  ])('rejects %j', (text, message) => {
    expect(() => parseDuration(text)).toThrow(message);
    expect(() => parseDuration(text)).toThrow(text.trim() === '' ? /invalid duration/ : text);
  });

  it('rejects non-strings', () => {
    expect(() => parseDuration(5 as never)).toThrow(TypeError);
  });

  it('reads back whatever formatDuration writes', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER }), (ms) => {
        expect(parseDuration(formatDuration(ms))).toBe(ms);
      }),
    );
  });

  it('adds up compound durations', () => {
    const UNIT_MS = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;
    const segments = fc.array(
      fc.tuple(fc.integer({ min: 0, max: 100_000 }), fc.constantFrom('ms', 's', 'm', 'h', 'd')),
      { minLength: 1, maxLength: 5 },
    );
    fc.assert(
      fc.property(segments, (parts) => {
        const text = parts.map(([n, unit]) => `${n}${unit}`).join('');
        const sum = parts.reduce((total, [n, unit]) => total + n * UNIT_MS[unit], 0);
        expect(parseDuration(text)).toBe(sum);
      }),
    );
  });
});
