import { describe, expect, it } from 'vitest';
import type { PolicyOverrides } from '../../src/policy/defaults.ts';
import { DEFAULT_POLICY, definePolicy, validatePolicy } from '../../src/policy/defaults.ts';
import type { RetryPolicy } from '../../src/policy/types.ts';

const HOUR = 3_600_000;

describe('DEFAULT_POLICY', () => {
  it("holds the document's numbers", () => {
    expect(DEFAULT_POLICY).toEqual({
      classifier: { mode: 'strict' },
      backoff: { kind: 'exponential', baseMs: 60_000, capMs: HOUR, jitter: 'equal' },
      retryAfter: { statuses: [429, 503], ceilingMs: 24 * HOUR },
      giveUp: { maxAttempts: 16, windowMs: 72 * HOUR },
    });
  });

  it('is valid and deeply frozen', () => {
    expect(validatePolicy(DEFAULT_POLICY)).toBe(DEFAULT_POLICY);
    expect(Object.isFrozen(DEFAULT_POLICY)).toBe(true);
    expect(Object.isFrozen(DEFAULT_POLICY.backoff)).toBe(true);
    expect(Object.isFrozen(DEFAULT_POLICY.retryAfter.statuses)).toBe(true);
  });
});

describe('definePolicy', () => {
  it('without overrides is the default', () => {
    expect(definePolicy()).toEqual(DEFAULT_POLICY);
  });

  it('overrides field by field', () => {
    const policy = definePolicy({ backoff: { baseMs: 1_000 }, giveUp: { maxAttempts: 8 } });
    expect(policy.backoff).toEqual({ kind: 'exponential', baseMs: 1_000, capMs: HOUR, jitter: 'equal' });
    expect(policy.giveUp).toEqual({ maxAttempts: 8, windowMs: 72 * HOUR });
    expect(policy.classifier).toEqual(DEFAULT_POLICY.classifier);
  });

  it('a schedule alone switches to schedule mode', () => {
    expect(definePolicy({ backoff: { scheduleMs: [5_000, 300_000], jitter: 'full' } }).backoff).toEqual({
      kind: 'schedule',
      scheduleMs: [5_000, 300_000],
      jitter: 'full',
    });
  });

  it('takes classifier mode and overrides', () => {
    const policy = definePolicy({ classifier: { mode: 'lenient', overrides: { 404: 'permanent' } } });
    expect(policy.classifier).toEqual({ mode: 'lenient', overrides: { 404: 'permanent' } });
  });
});

describe('validation names the offending field', () => {
  it.each<[string, PolicyOverrides, ErrorConstructor, RegExp]>([
    ['negative base', { backoff: { baseMs: -1 } }, RangeError, /^backoff\.baseMs .*got -1$/],
    ['zero base', { backoff: { baseMs: 0 } }, RangeError, /^backoff\.baseMs/],
    ['fractional base', { backoff: { baseMs: 1.5 } }, RangeError, /^backoff\.baseMs/],
    ['cap below base', { backoff: { baseMs: 10_000, capMs: 5_000 } }, RangeError, /^backoff\.capMs .*baseMs/],
    ['non-numeric cap', { backoff: { capMs: '1h' as never } }, TypeError, /^backoff\.capMs must be a number/],
    ['empty schedule', { backoff: { scheduleMs: [] } }, RangeError, /^backoff\.scheduleMs/],
    ['schedule not a list', { backoff: { scheduleMs: '5s,5m' as never } }, TypeError, /^backoff\.scheduleMs/],
    [
      'negative schedule entry',
      { backoff: { scheduleMs: [5, -5] } },
      RangeError,
      /^backoff\.scheduleMs\[1\]/,
    ],
    ['base with a schedule', { backoff: { kind: 'schedule', baseMs: 5 } }, TypeError, /^backoff\.baseMs/],
    [
      'schedule with exponential',
      { backoff: { kind: 'exponential', scheduleMs: [5] } },
      TypeError,
      /scheduleMs/,
    ],
    ['unknown jitter mode', { backoff: { jitter: 'half' as never } }, TypeError, /^backoff\.jitter .*'half'/],
    ['unknown backoff kind', { backoff: { kind: 'linear' as never } }, TypeError, /^backoff\.kind/],
    ['unknown classifier mode', { classifier: { mode: 'loose' as never } }, TypeError, /^classifier\.mode/],
    ['override of an invalid status', { classifier: { overrides: { 700: 'retry' } } }, RangeError, /\[700\]/],
    [
      'override to an unknown verdict',
      { classifier: { overrides: { 404: 'drop' as never } } },
      TypeError,
      /404/,
    ],
    ['invalid Retry-After status', { retryAfter: { statuses: [429, 42] } }, RangeError, /statuses\[1\]/],
    ['negative ceiling', { retryAfter: { ceilingMs: -1 } }, RangeError, /^retryAfter\.ceilingMs/],
    ['zero max attempts', { giveUp: { maxAttempts: 0 } }, RangeError, /^giveUp\.maxAttempts/],
    ['negative window', { giveUp: { windowMs: -1 } }, RangeError, /^giveUp\.windowMs/],
    ['infinite window', { giveUp: { windowMs: Number.POSITIVE_INFINITY } }, RangeError, /^giveUp\.windowMs/],
    // Beyond what a Date holds once added to now: a completion could never be written.
    ['window over 100 years', { giveUp: { windowMs: 2 ** 53 - 1 } }, RangeError, /^giveUp\.windowMs/],
    ['cap over 100 years', { backoff: { capMs: 3_155_760_000_001 } }, RangeError, /^backoff\.capMs/],
    ['schedule entry over 100 years', { backoff: { scheduleMs: [1e15] } }, RangeError, /scheduleMs\[0\]/],
    ['ceiling over 100 years', { retryAfter: { ceilingMs: 1e15 } }, RangeError, /^retryAfter\.ceilingMs/],
  ])('%s', (_, overrides, errorClass, message) => {
    expect(() => definePolicy(overrides)).toThrow(errorClass);
    expect(() => definePolicy(overrides)).toThrow(message);
  });

  // The classifier looks '404' up; these would be stored and never apply.
  it.each(['404.0', ' 404', '0404', '0x194', '4.04e2'])('refuses the override key %j', (key) => {
    expect(() => definePolicy({ classifier: { overrides: { [key]: 'permanent' as const } } })).toThrow(
      /^classifier\.overrides keys must be statuses written as digits/,
    );
  });

  it('says what it expected and what it got', () => {
    expect(() => definePolicy({ backoff: { capMs: 1_000 } })).toThrow(
      'backoff.capMs must be an integer from 60000 to 3155760000000 (milliseconds, not below backoff.baseMs), got 1000',
    );
  });

  it('validatePolicy checks policies built by hand', () => {
    const handmade: RetryPolicy = {
      ...DEFAULT_POLICY,
      backoff: { kind: 'schedule', scheduleMs: [], jitter: 'none' },
    };
    expect(() => validatePolicy(handmade)).toThrow(/backoff\.scheduleMs/);
  });
});
