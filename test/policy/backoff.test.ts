import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { applyJitter, backoffDelay, nominalDelay } from '../../src/policy/backoff.ts';
import { DEFAULT_POLICY } from '../../src/policy/defaults.ts';
import type { BackoffPolicy, JitterMode } from '../../src/policy/types.ts';
import { seededRandom } from '../../src/random.ts';

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
type ExponentialBackoff = Extract<BackoffPolicy, { kind: 'exponential' }>;
const exponential = (jitter: JitterMode): BackoffPolicy => ({ ...DEFAULT_POLICY.backoff, jitter });

const retryNumbers = fc.oneof(
  fc.integer({ min: 1, max: 1_000_000 }),
  fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER }),
  fc.constantFrom(Number.MAX_SAFE_INTEGER, 2 ** 53, 1e300),
);
const draws = fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true });
const jitters = fc.constantFrom<JitterMode>('equal', 'full', 'none');
const exponentialPolicies = fc
  .record({
    baseMs: fc.integer({ min: 1, max: 10 * MINUTE }),
    extra: fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER - 10 * MINUTE }),
    jitter: jitters,
  })
  .map(
    ({ baseMs, extra, jitter }): ExponentialBackoff => ({
      kind: 'exponential',
      baseMs,
      capMs: baseMs + extra,
      jitter,
    }),
  );

/** The band each jitter mode promises around a nominal delay d. */
function band(d: number, jitter: JitterMode): [number, number] {
  if (jitter === 'none') return [d, d];
  return [jitter === 'equal' ? d / 2 : 0, d];
}

describe('nominalDelay', () => {
  it("follows the document's schedule with the default policy", () => {
    const waits = Array.from({ length: 10 }, (_, i) => nominalDelay(i + 1, DEFAULT_POLICY.backoff));
    expect(waits).toEqual([1, 2, 4, 8, 16, 32, 60, 60, 60, 60].map((m) => m * MINUTE));
  });

  it('caps huge retry numbers without overflowing', () => {
    for (const n of [1024, 1025, Number.MAX_SAFE_INTEGER, 2 ** 60, 1e300]) {
      expect(nominalDelay(n, DEFAULT_POLICY.backoff)).toBe(HOUR);
    }
    const wide: BackoffPolicy = {
      kind: 'exponential',
      baseMs: 1,
      capMs: Number.MAX_SAFE_INTEGER,
      jitter: 'none',
    };
    expect(nominalDelay(54, wide)).toBe(Number.MAX_SAFE_INTEGER);
    expect(nominalDelay(Number.MAX_SAFE_INTEGER, wide)).toBe(Number.MAX_SAFE_INTEGER);
  });

  it('never decreases as retries accumulate', () => {
    fc.assert(
      fc.property(exponentialPolicies, retryNumbers, (policy, n) => {
        expect(nominalDelay(n + 1, policy)).toBeGreaterThanOrEqual(nominalDelay(n, policy));
      }),
    );
  });

  it('follows an explicit schedule, repeating its last entry', () => {
    const schedule: BackoffPolicy = {
      kind: 'schedule',
      scheduleMs: [5_000, 300_000, 1_800_000],
      jitter: 'none',
    };
    expect([1, 2, 3, 4, 100, Number.MAX_SAFE_INTEGER].map((n) => nominalDelay(n, schedule))).toEqual([
      5_000, 300_000, 1_800_000, 1_800_000, 1_800_000, 1_800_000,
    ]);
  });

  it.each([0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY])('rejects retry number %s', (n) => {
    expect(() => nominalDelay(n, DEFAULT_POLICY.backoff)).toThrow(RangeError);
  });
});

describe('backoffDelay (property)', () => {
  it('stays in its jitter band, within the cap, a non-negative integer', () => {
    fc.assert(
      fc.property(exponentialPolicies, retryNumbers, draws, (policy, n, r) => {
        const d = nominalDelay(n, policy);
        const delay = backoffDelay(n, policy, () => r);
        const [low, high] = band(d, policy.jitter);
        expect(Number.isInteger(delay)).toBe(true);
        expect(delay).toBeGreaterThanOrEqual(low);
        expect(delay).toBeLessThanOrEqual(high);
        expect(delay).toBeLessThanOrEqual(policy.capMs);
        expect(delay).toBeGreaterThanOrEqual(0);
      }),
    );
  });

  it('with the default policy: 1..1e6 and huge retry numbers never pass one hour', () => {
    fc.assert(
      fc.property(retryNumbers, draws, jitters, (n, r, jitter) => {
        const delay = backoffDelay(n, exponential(jitter), () => r);
        const [low, high] = band(nominalDelay(n, DEFAULT_POLICY.backoff), jitter);
        expect(delay).toBeGreaterThanOrEqual(low);
        expect(delay).toBeLessThanOrEqual(Math.min(high, HOUR));
      }),
    );
  });

  it('in schedule mode follows the list, jittered within its band', () => {
    const schedules = fc.array(fc.integer({ min: 0, max: 10 * 24 * HOUR }), { minLength: 1, maxLength: 12 });
    fc.assert(
      fc.property(schedules, jitters, retryNumbers, draws, (scheduleMs, jitter, n, r) => {
        const d = scheduleMs[Math.min(n, scheduleMs.length) - 1]!;
        const delay = backoffDelay(n, { kind: 'schedule', scheduleMs, jitter }, () => r);
        const [low, high] = band(d, jitter);
        expect(Number.isInteger(delay)).toBe(true);
        expect(delay).toBeGreaterThanOrEqual(low);
        expect(delay).toBeLessThanOrEqual(high);
      }),
    );
  });
});

describe('applyJitter', () => {
  it('spans the whole band, ends included', () => {
    const justBelowOne = 1 - 2 ** -53;
    expect(applyJitter(HOUR, 'equal', () => 0)).toBe(HOUR / 2);
    expect(applyJitter(HOUR, 'equal', () => justBelowOne)).toBe(HOUR);
    expect(applyJitter(HOUR, 'full', () => 0)).toBe(0);
    expect(applyJitter(HOUR, 'full', () => justBelowOne)).toBe(HOUR);
    expect(applyJitter(7, 'equal', () => 0)).toBe(4); // ⌈7/2⌉: whole milliseconds, never below half
    expect(applyJitter(Number.MAX_SAFE_INTEGER, 'full', () => justBelowOne)).toBe(Number.MAX_SAFE_INTEGER);
  });

  it("'none' draws no randomness", () => {
    const noDraw = () => {
      throw new Error('random() called');
    };
    expect(applyJitter(4 * MINUTE, 'none', noDraw)).toBe(4 * MINUTE);
  });

  // Equal jitter keeps 3/4 of the nominal delay on average and never less than half: the
  // schedule keeps its shape while deliveries that failed together spread over the upper half.
  // Full jitter spreads over the whole range and keeps only 1/2 on average.
  it.each([
    ['equal', 0.75, 0.5],
    ['full', 0.5, 0],
  ] as const)('%s jitter keeps %f of the nominal delay on average', (jitter, meanShare, floorShare) => {
    const samples = 20_000;
    for (const seed of [1, 42, 2026]) {
      const random = seededRandom(seed);
      for (const d of [MINUTE, 4 * MINUTE, HOUR]) {
        let sum = 0;
        let least = Number.POSITIVE_INFINITY;
        for (let i = 0; i < samples; i++) {
          const delay = applyJitter(d, jitter, random);
          sum += delay;
          least = Math.min(least, delay);
        }
        // Uniform draws: the sample mean's standard error is below 0.3% of d here; allow 1%.
        expect(Math.abs(sum / samples / d - meanShare)).toBeLessThan(0.01);
        expect(least).toBeGreaterThanOrEqual(floorShare * d);
      }
    }
  });
});
