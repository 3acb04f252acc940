import { describe, expect, it } from 'vitest';
import { OwnFailures } from '../../src/dispatch/own-failures.ts';

describe('OwnFailures', () => {
  it('gives a delivery back due at once the first time, then a minute later doubling to an hour', () => {
    const failures = new OwnFailures();
    expect(failures.failed(1)).toBe(0);
    expect(failures.failed(2)).toBe(0);
    const delays = Array.from({ length: 8 }, () => failures.failed(1) / 60_000);
    expect(delays).toEqual([1, 2, 4, 8, 16, 32, 60, 60]);
    failures.succeeded(1);
    expect(failures.failed(1)).toBe(0);
  });

  it('paces the claim loop while failures run in a row: 100 ms doubling to 5 s, none after a success', () => {
    const failures = new OwnFailures();
    expect(failures.pauseMs()).toBe(0);
    const pauses = Array.from({ length: 9 }, (_, i) => {
      failures.failed(i);
      return failures.pauseMs();
    });
    expect(pauses).toEqual([100, 200, 400, 800, 1_600, 3_200, 5_000, 5_000, 5_000]);
    failures.succeeded(42);
    expect(failures.pauseMs()).toBe(0);
  });

  it("does not pace the claim loop for one endpoint's own failures, yet delays those deliveries", () => {
    const failures = new OwnFailures();
    for (let i = 0; i < 20; i++) failures.failed(i, false);
    expect(failures.pauseMs()).toBe(0);
    expect(failures.failed(0, false)).toBe(60_000);
  });
});
