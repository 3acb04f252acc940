import { describe, expect, it } from 'vitest';
import { probeHostStalls, summarizeStalls } from '../../bench/host-stalls.ts';

/** Units of 1 ms back to back, except the given ones (index → duration in ms). */
function run(count: number, slow: Record<number, number>) {
  const starts: number[] = [];
  const durations: number[] = [];
  let at = 0;
  for (let i = 0; i < count; i++) {
    const d = slow[i] ?? 1;
    starts.push(at);
    durations.push(d);
    at += d;
  }
  return { starts, durations, elapsed: at };
}

describe('summarizeStalls', () => {
  it('finds no stretch when every unit runs at the median pace', () => {
    const { starts, durations, elapsed } = run(1_000, {});
    expect(summarizeStalls(starts, durations, elapsed)).toEqual({
      unitUs: 1000,
      windows: 0,
      stalledPct: 0,
      longestMs: 0,
      worstFactor: 1,
    });
  });

  it('merges slow units a few ms apart into one stretch and measures it end to end', () => {
    // 10 and 11 slow, then two normal units (2 ms), then 14 slow: one stretch from 10 to the end of 14.
    const { starts, durations, elapsed } = run(1_000, { 10: 5, 11: 4, 14: 6, 500: 2.5, 800: 10 });
    const s = summarizeStalls(starts, durations, elapsed);
    expect(s.windows).toBe(2); // unit 500 is under 3x; unit 800 is a stretch of its own
    expect(s.longestMs).toBe(5 + 4 + 1 + 1 + 6);
    expect(s.stalledPct).toBeCloseTo((100 * (17 + 10)) / elapsed, 6);
    expect(s.worstFactor).toBe(10);
  });

  it('keeps slow units far apart as separate stretches', () => {
    const { starts, durations, elapsed } = run(1_000, { 100: 4, 200: 4, 300: 4 });
    const s = summarizeStalls(starts, durations, elapsed);
    expect(s.windows).toBe(3);
    expect(s.longestMs).toBe(4);
  });
});

describe('probeHostStalls', () => {
  it('times units of work on this machine', () => {
    const s = probeHostStalls(0.2);
    expect(s.unitUs).toBeGreaterThan(0);
    expect(s.stalledPct).toBeGreaterThanOrEqual(0);
    expect(s.stalledPct).toBeLessThanOrEqual(100);
    expect(s.worstFactor).toBeGreaterThanOrEqual(1);
  });
});
