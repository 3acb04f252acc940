import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { findHeader, parseRetryAfter, retryAfterFromHeaders } from '../../src/policy/retry-after.ts';

const DAY = 86_400_000;
const YEAR = 365 * DAY;
// 37 seconds before the RFC's example date, Sun, 06 Nov 1994 08:49:37 GMT.
const NOW = Date.UTC(1994, 10, 6, 8, 49, 0);

describe('parseRetryAfter: delta-seconds', () => {
  it.each([
    ['120', 120_000],
    ['0', 0],
    ['007', 7_000],
    [' 60 ', 60_000],
    ['\t60\t', 60_000],
    ['31536000', YEAR],
    ['31536001', YEAR + 1000], // longer than any ceiling allows, but still "longer": the policy caps it
    ['99999999999999999999999999', Math.floor(Number.MAX_SAFE_INTEGER / 1000) * 1000], // as long as can be
    // Outside the grammar, read so as never to come back sooner than asked:
    ['3600.0', 3_600_000], // a fraction, rounded up
    ['1.5', 2_000],
    ['0.001', 1_000],
    ['120, 120', 120_000], // repeated headers a proxy joined: the first, as for repeated headers
    ['30,600', 30_000],
  ])('%j → %i ms', (value, ms) => {
    expect(parseRetryAfter(value, NOW)).toBe(ms);
  });

  it('reads any whole number of seconds', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 100 * 365 * 86_400 }),
        fc.constantFrom('', ' ', '\t'),
        (seconds, pad) => {
          expect(parseRetryAfter(`${pad}${seconds}${pad}`, NOW)).toBe(seconds * 1000);
        },
      ),
    );
  });
});

describe('parseRetryAfter: HTTP-date, the three forms RFC 9110 requires', () => {
  it.each([
    'Sun, 06 Nov 1994 08:49:37 GMT', // IMF-fixdate
    'Sunday, 06-Nov-94 08:49:37 GMT', // obsolete RFC 850
    'Sun Nov  6 08:49:37 1994', // obsolete asctime
    '  Sun, 06 Nov 1994 08:49:37 GMT ',
  ])('%j is 37 s away', (value) => {
    expect(parseRetryAfter(value, NOW)).toBe(37_000);
  });

  it('a date in the past means now', () => {
    expect(parseRetryAfter('Sun, 06 Nov 1994 08:48:00 GMT', NOW)).toBe(0);
    expect(parseRetryAfter('Sat Nov  5 08:49:37 1994', NOW)).toBe(0);
  });

  it('accepts leap days and the leap second', () => {
    const now = Date.UTC(2024, 1, 28);
    expect(parseRetryAfter('Thu, 29 Feb 2024 00:00:00 GMT', now)).toBe(DAY);
    expect(parseRetryAfter('Wed, 28 Feb 2024 23:59:60 GMT', now)).toBe(DAY);
  });

  it('reads a two-digit year as the one within 50 years of now', () => {
    const now2026 = Date.UTC(2026, 0, 1);
    expect(parseRetryAfter('Thursday, 01-Jan-26 00:01:00 GMT', now2026)).toBe(60_000);
    // '77' would be 51 years ahead, so it is 1977 (a Saturday; 1 Jan 2077 is a Friday): in the past.
    expect(parseRetryAfter('Saturday, 01-Jan-77 00:00:00 GMT', now2026)).toBe(0);
    expect(parseRetryAfter('Friday, 01-Jan-77 00:00:00 GMT', now2026)).toBeUndefined();
    // '76' is exactly 50 years ahead, so 2076.
    expect(parseRetryAfter('Wednesday, 01-Jan-76 00:00:00 GMT', now2026)).toBe(
      Date.UTC(2076, 0, 1) - now2026,
    );
    // '00' read in the last hour of 2099 is 2100, one hour away, not 2000.
    expect(parseRetryAfter('Friday, 01-Jan-00 00:00:00 GMT', Date.UTC(2099, 11, 31, 23))).toBe(3_600_000);
  });

  it('reads every IMF-fixdate toUTCString() writes, to the second', () => {
    fc.assert(
      fc.property(fc.integer({ min: -10 * DAY, max: 10 * YEAR }), (offset) => {
        const at = NOW + offset;
        const expected = Math.max(0, Math.floor(at / 1000) * 1000 - NOW);
        expect(parseRetryAfter(new Date(at).toUTCString(), NOW)).toBe(expected);
      }),
    );
  });
});

describe('parseRetryAfter: unusable values are absent, never errors', () => {
  it.each([
    'soon',
    '-5',
    '+5',
    '1.',
    '.5',
    '1e3',
    '120,',
    '120, soon',
    '0x10',
    '',
    '   ',
    '5 s',
    '1 2',
    'Sun, 32 Nov 1994 08:49:37 GMT', // no such day
    'Sun, 31 Nov 1994 08:49:37 GMT', // November has 30
    'Fri, 29 Feb 2019 08:49:37 GMT', // not a leap year
    'Mon, 06 Nov 1994 08:49:37 GMT', // 6 Nov 1994 was a Sunday
    'Sunday, 06 Nov 1994 08:49:37 GMT', // long day name in IMF-fixdate
    'Sun, 06-Nov-94 08:49:37 GMT', // short day name in RFC 850
    'sun, 06 Nov 1994 08:49:37 GMT', // names are case-sensitive
    'Sun, 06 nov 1994 08:49:37 GMT',
    'Sun, 6 Nov 1994 08:49:37 GMT', // IMF-fixdate needs two day digits
    'Sun, 06 Nov 94 08:49:37 GMT',
    'Sun, 06 Nov 1994 08:49:37 UTC',
    'Sun, 06 Nov 1994 08:49:37',
    'Sun, 06 Nov 1994 24:00:00 GMT',
    'Sun, 06 Nov 1994 08:60:00 GMT',
    'Sun, 06 Nov 1994 08:49:61 GMT',
    'Sun, 06 Nov 1994 8:49:37 GMT',
    'Sun Nov 6 08:49:37 1994', // asctime pads a one-digit day with a space
    'Sun Nov  6 08:49:37 1994 GMT',
    'Sun, 06 Nov 1994 08:49:37 GMT trailing',
    '1994-11-06T08:49:37Z', // ISO 8601 is not an HTTP-date
  ])('%j', (value) => {
    expect(parseRetryAfter(value, NOW)).toBeUndefined();
  });

  it('absent is undefined', () => {
    expect(parseRetryAfter(undefined, NOW)).toBeUndefined();
    expect(parseRetryAfter([], NOW)).toBeUndefined();
  });

  it('never throws and is a whole number of milliseconds ≥ 0', () => {
    const values = fc.oneof(fc.string(), fc.array(fc.string()), fc.constant(undefined));
    fc.assert(
      fc.property(values, fc.integer({ min: -1e15, max: 1e15 }), (value, now) => {
        const delay = parseRetryAfter(value, now);
        if (delay !== undefined) {
          expect(Number.isSafeInteger(delay)).toBe(true);
          expect(delay).toBeGreaterThanOrEqual(0);
        }
      }),
    );
  });
});

describe('parseRetryAfter: repeated headers', () => {
  it('uses the first usable value', () => {
    expect(parseRetryAfter(['30', '60'], NOW)).toBe(30_000);
    expect(parseRetryAfter(['soon', '-1', 'Sun, 06 Nov 1994 08:49:37 GMT', '5'], NOW)).toBe(37_000);
    expect(parseRetryAfter(['soon', 'later'], NOW)).toBeUndefined();
  });
});

describe('findHeader / retryAfterFromHeaders', () => {
  it.each(['Retry-After', 'retry-after', 'RETRY-AFTER', 'rEtRy-AfTeR'])('finds %s', (name) => {
    expect(findHeader({ 'content-type': 'text/plain', [name]: '5' }, 'retry-after')).toBe('5');
    expect(retryAfterFromHeaders({ [name]: '5' }, NOW)).toBe(5_000);
  });

  it('passes repeated values through and skips undefined entries', () => {
    expect(findHeader({ 'retry-after': ['5', '10'] }, 'Retry-After')).toEqual(['5', '10']);
    expect(findHeader({ 'Retry-After': undefined, 'retry-after': '7' }, 'retry-after')).toBe('7');
    expect(retryAfterFromHeaders({ 'retry-after': ['x', '10'] }, NOW)).toBe(10_000);
  });

  it('is undefined when missing', () => {
    expect(findHeader({ 'content-type': 'text/plain' }, 'retry-after')).toBeUndefined();
    expect(retryAfterFromHeaders(undefined, NOW)).toBeUndefined();
  });
});
