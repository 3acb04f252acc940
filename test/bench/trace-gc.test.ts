import { describe, expect, it } from 'vitest';
import { summarizeTraceGc } from '../../bench/trace-gc.ts';

const OUTPUT = `worker started
[8581:0x33029cc0]     4751 ms: Scavenge 42.4 (62.2) -> 32.5 (63.2) MB, 5.47 / 0.23 ms  (average mu = 0.998, current mu = 0.984) task;
[8581:0x33029cc0]     4807 ms: Scavenge 44.5 (63.2) -> 35.1 (65.4) MB, 8.81 / 0.18 ms  (average mu = 0.998, current mu = 0.984) task;
[8581:0x33029cc0]     5067 ms: Mark-Compact 65.0 (87.4) -> 17.9 (74.7) MB, 8.61 / 0.14 ms  (+ 1.5 ms in 40 steps since start of marking) finalize incremental marking via task; GC in old space requested
[8581:0x33029cc0]     5100 ms: Scavenge 29.9 (74.7) -> 17.5 (74.7) MB, 2.00 / 0.10 ms  (average mu = 0.992, current mu = 0.992) allocation failure;
[8581:0x33029cc0]     5200 ms: Mark-Compact (reduce) 20.0 (74.7) -> 15.0 (40.0) MB, 1.50 / 0.00 ms  (average mu = 0.992) memory reducer
a log line that mentions Scavenge but is no GC trace
`;

describe('summarizeTraceGc', () => {
  it('sums scavenges and mark-compacts, and counts what scavenges left behind beyond the last collection as promoted', () => {
    const s = summarizeTraceGc(OUTPUT);
    expect(s.scavenges).toBe(3);
    expect(s.scavengeMs).toBeCloseTo(5.47 + 8.81 + 2.0, 6);
    expect(s.markCompacts).toBe(2);
    expect(s.markCompactMs).toBeCloseTo(8.61 + 1.5, 6);
    // 32.5 → 35.1 grew 2.6; after the mark-compact (17.9) the scavenge left 17.5: nothing promoted.
    expect(s.promotedMb).toBeCloseTo(2.6, 6);
  });

  it('is all zeros for output without GC lines', () => {
    expect(summarizeTraceGc('worker started\n')).toEqual({
      scavenges: 0,
      scavengeMs: 0,
      markCompacts: 0,
      markCompactMs: 0,
      promotedMb: 0,
    });
  });
});
