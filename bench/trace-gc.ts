/**
 * What `node --trace-gc` printed, summed: how much time the collector took and how much it moved
 * to the old generation. A scavenge's promoted bytes are read as the growth of the heap it leaves
 * behind from the previous collection's (its own survivors stay young and are freed again).
 */
export interface GcSummary {
  scavenges: number;
  scavengeMs: number;
  markCompacts: number;
  markCompactMs: number;
  /** MB (V8's unit in these lines) the scavenges promoted. */
  promotedMb: number;
}

// e.g. "Scavenge 42.4 (62.2) -> 32.5 (63.2) MB, 5.47 / 0.23 ms" or "Mark-Compact 13.2 (18.4) -> …"
const LINE =
  /(Scavenge|Mark-Compact)(?: \(reduce\))? [\d.]+ \([\d.]+\) -> ([\d.]+) \([\d.]+\) MB, ([\d.]+) \//;

export function summarizeTraceGc(output: string): GcSummary {
  const summary: GcSummary = {
    scavenges: 0,
    scavengeMs: 0,
    markCompacts: 0,
    markCompactMs: 0,
    promotedMb: 0,
  };
  let previousAfter: number | null = null;
  for (const line of output.split('\n')) {
    const m = LINE.exec(line);
    if (!m) continue;
    const after = Number(m[2]);
    const ms = Number(m[3]);
    if (m[1] === 'Scavenge') {
      summary.scavenges++;
      summary.scavengeMs += ms;
      if (previousAfter !== null) summary.promotedMb += Math.max(0, after - previousAfter);
    } else {
      summary.markCompacts++;
      summary.markCompactMs += ms;
    }
    previousAfter = after;
  }
  return summary;
}
