import { describe, expect, it } from 'vitest';
import { DEFAULT_POLICY } from '../../src/policy/defaults.ts';
import { exhausted, giveUpAt } from '../../src/policy/give-up.ts';

const HOUR = 3_600_000;
const START = Date.UTC(2026, 0, 1);
const policy = DEFAULT_POLICY.giveUp;
const deadline = giveUpAt(START, policy);

describe('giveUpAt', () => {
  it('is 72 hours after the first attempt by default', () => {
    expect(deadline).toBe(START + 72 * HOUR);
    expect(giveUpAt(START, { maxAttempts: 3, windowMs: HOUR })).toBe(START + HOUR);
  });
});

describe('exhausted', () => {
  it('is undefined while attempts and time remain', () => {
    expect(exhausted(1, deadline, START, policy)).toBeUndefined();
    expect(exhausted(15, deadline, deadline - 1, policy)).toBeUndefined();
  });

  it('stops at max attempts (16 by default)', () => {
    expect(exhausted(16, deadline, START + HOUR, policy)).toEqual({
      reason: 'max_attempts',
      detail: 'gave up after 16 attempts (the policy allows 16)',
    });
    expect(exhausted(20, deadline, START, policy)?.reason).toBe('max_attempts');
  });

  it('stops at the give-up time, inclusive', () => {
    expect(exhausted(3, deadline, deadline, policy)).toEqual({
      reason: 'deadline',
      detail: 'gave up: the retry window is over',
    });
    expect(exhausted(3, deadline, deadline + 90_000, policy)?.detail).toBe(
      'gave up: the retry window is over (it closed 1m30s ago)',
    );
  });

  it('reports max attempts when both limits are reached', () => {
    expect(exhausted(16, deadline, deadline + 1, policy)?.reason).toBe('max_attempts');
  });
});
