/**
 * How steady the host's CPU is: a fixed computation, timed over and over on the idle machine.
 * Some virtual machines run several times slower for tens of milliseconds every second or two
 * (both vCPUs at once, without the process being descheduled: no steal time shows). Every message
 * in flight during such a window is late by about its length, so where the windows add up to more
 * than 1 % of the time, a p99 latency reads the host rather than the pipeline.
 */

export interface HostStalls {
  seconds: number;
  /** The median time of one unit of work, in µs. */
  unitUs: number;
  /** Stretches where units ran at least SLOW_FACTOR times slower than the median. */
  windows: number;
  /** Share of the probe's time spent inside those stretches. */
  stalledPct: number;
  longestMs: number;
  /** The slowest unit against the median. */
  worstFactor: number;
}

/** A unit this many times slower than the median is a slow one. */
export const SLOW_FACTOR = 3;
/** Slow units this close together belong to one stretch. */
const MERGE_GAP_MS = 5;
const UNIT_ITERATIONS = 10_000;

let sink = 1;

/** One unit of integer arithmetic: no allocation, so no garbage collection interrupts it. */
function unit(): void {
  let x = sink;
  for (let i = 0; i < UNIT_ITERATIONS; i++) x = (x * 1_103_515_245 + 12_345) % 2_147_483_647;
  sink = x;
}

/** Spins on one core for `seconds` (the first 100 ms warm up the JIT and are left out). */
export function probeHostStalls(seconds: number): HostStalls {
  const warmUntil = performance.now() + 100;
  while (performance.now() < warmUntil) unit();
  const starts: number[] = [];
  const durations: number[] = [];
  const t0 = performance.now();
  const end = t0 + seconds * 1000;
  for (let at = t0; at < end; ) {
    unit();
    const done = performance.now();
    starts.push(at);
    durations.push(done - at);
    at = done;
  }
  return { seconds, ...summarizeStalls(starts, durations, performance.now() - t0) };
}

/** The stretches of slow units among units that ran back to back (start times and durations in ms). */
export function summarizeStalls(
  starts: readonly number[],
  durations: readonly number[],
  elapsedMs: number,
): Omit<HostStalls, 'seconds'> {
  const median = [...durations].sort((a, b) => a - b)[durations.length >> 1]!;
  let windows = 0;
  let stalled = 0;
  let longest = 0;
  let worst = 0;
  let open: { from: number; to: number } | null = null;
  const close = () => {
    if (!open) return;
    windows++;
    stalled += open.to - open.from;
    longest = Math.max(longest, open.to - open.from);
    open = null;
  };
  for (let i = 0; i < durations.length; i++) {
    worst = Math.max(worst, durations[i]! / median);
    if (durations[i]! < SLOW_FACTOR * median) continue;
    const from = starts[i]!;
    const to = from + durations[i]!;
    if (open && from - open.to <= MERGE_GAP_MS) open.to = to;
    else {
      close();
      open = { from, to };
    }
  }
  close();
  return {
    unitUs: median * 1000,
    windows,
    stalledPct: (100 * stalled) / elapsedMs,
    longestMs: longest,
    worstFactor: worst,
  };
}
