import { describe, expect, it } from 'vitest';
import { OwnFailures } from '../../src/dispatch/own-failures.ts';

describe('OwnFailures', () => {
  it('gives a delivery back the first time, keeps it leased from the second, until a request goes out', () => {
    const failures = new OwnFailures();
    expect(failures.failed(1)).toBe('give_back');
    expect(failures.failed(2)).toBe('give_back');
    expect(failures.failed(1)).toBe('keep_leased');
    expect(failures.failed(1)).toBe('keep_leased');
    failures.succeeded(1);
    expect(failures.failed(1)).toBe('give_back');
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
});
