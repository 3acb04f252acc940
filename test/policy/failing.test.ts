import { describe, expect, it } from 'vitest';
import { DEFAULT_DISABLE_FAILING_AFTER_MS, failingTooLong } from '../../src/policy/index.ts';

const DAY = 86_400_000;
const since = Date.UTC(2026, 0, 1);

describe('failingTooLong', () => {
  it('holds from the instant the run has lasted the time allowed, 5 days by default', () => {
    expect(DEFAULT_DISABLE_FAILING_AFTER_MS).toBe(5 * DAY);
    expect(failingTooLong(since, since + 5 * DAY - 1, 5 * DAY)).toBe(false);
    expect(failingTooLong(since, since + 5 * DAY, 5 * DAY)).toBe(true);
    expect(failingTooLong(since, since + 9 * DAY, 5 * DAY)).toBe(true);
  });

  it('never holds without a run, or when turned off', () => {
    expect(failingTooLong(null, since + 9 * DAY, 5 * DAY)).toBe(false);
    expect(failingTooLong(since, since + 90 * DAY, null)).toBe(false);
  });

  it('takes a clock set back as a shorter run, not a longer one', () => {
    expect(failingTooLong(since, since - DAY, 1)).toBe(false);
  });
});
