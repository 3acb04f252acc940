/** Checks made purely on what the receivers saw: in-flight cap, rate limit, Retry-After, hot loops. */
import type { EndpointPlan } from './catalog.ts';
import type { ReceiverReport, SeenRow } from './receiver.ts';

export const DEFAULT_MAX_IN_FLIGHT = 10;
export const DEFAULT_RATE_LIMIT = 1000;
const CLOCK_SLACK_MS = 50;
const TEN_MINUTES = 600_000;

export interface Measures {
  /** Worst ratio of measured concurrency to the endpoint's cap, among capped endpoints. */
  worstCap: { endpoint: string; seen: number; cap: number };
  worstRate: { endpoint: string; seen: number; limit: number };
  maxSameId: number;
  /** 429/503 answers with a Retry-After, and the smallest margin (ms) by which the next request respected it. */
  retryAfters: number;
  retryAfterMinMarginMs: number;
  /** Most requests one webhook-id got at one endpoint in any 10-minute window (duplicates included). */
  hotLoopSeen: number;
  violations: string[];
}

/** Appends to the list a map holds under key, creating it. */
export function append<K, V>(map: Map<K, V[]>, key: K, value: V): void {
  const list = map.get(key);
  if (list) list.push(value);
  else map.set(key, [value]);
}

/** Most timestamps in any window [t, t + widthMs) of a sorted list. */
export function busiestWindow(sorted: readonly number[], widthMs: number): number {
  let best = 0;
  let lo = 0;
  for (let hi = 0; hi < sorted.length; hi++) {
    while (sorted[hi]! - sorted[lo]! >= widthMs) lo++;
    best = Math.max(best, hi - lo + 1);
  }
  return best;
}

export function measure(plans: readonly EndpointPlan[], report: ReceiverReport, rateSlackMs = 0): Measures {
  const violations: string[] = [];
  const byEndpoint = new Map<number, number[]>();
  const byId = new Map<string, SeenRow[]>();
  for (const row of report.rows) {
    append(byEndpoint, row[0], row[2]);
    append(byId, `${row[0]} ${row[1]}`, row);
  }

  let worstCap = { endpoint: '-', seen: 0, cap: 1 };
  let worstRate = { endpoint: '-', seen: 0, limit: 1 };
  for (const plan of plans) {
    const cap = plan.maxInFlight ?? DEFAULT_MAX_IN_FLIGHT;
    const seen = report.maxConcurrent[plan.index] ?? 0;
    if (seen > cap) violations.push(`in-flight cap: ${plan.name} had ${seen} requests at once, cap ${cap}`);
    if (plan.maxInFlight && seen / cap >= worstCap.seen / worstCap.cap) {
      worstCap = { endpoint: plan.name, seen, cap };
    }
    const limit = plan.rateLimit ?? DEFAULT_RATE_LIMIT;
    const times = (byEndpoint.get(plan.index) ?? []).sort((a, b) => a - b);
    const busiest = busiestWindow(times, 1_000 - rateSlackMs);
    if (busiest > limit)
      violations.push(`rate limit: ${plan.name} got ${busiest} requests in 1 s, limit ${limit}`);
    if (plan.rateLimit && busiest / limit >= worstRate.seen / worstRate.limit) {
      worstRate = { endpoint: plan.name, seen: busiest, limit };
    }
  }
  for (const [index, id, at] of report.overlaps) {
    const earlier = (byId.get(`${index} ${id}`) ?? [])
      .filter((r) => r[2] <= at)
      .map((r) => `${r[2]}:${r[3]}`);
    violations.push(
      `same webhook-id twice in flight: ${plans[index]!.name} ${id} at ${at} (requests so far ${earlier.join(', ')})`,
    );
  }

  let retryAfters = 0;
  let retryAfterMinMarginMs = Number.POSITIVE_INFINITY;
  let hotLoopSeen = 0;
  for (const list of byId.values()) {
    list.sort((a, b) => a[2] - b[2]);
    hotLoopSeen = Math.max(
      hotLoopSeen,
      busiestWindow(
        list.map((r) => r[2]),
        TEN_MINUTES,
      ),
    );
    for (let i = 0; i < list.length; i++) {
      const notBefore = list[i]![5];
      if (!notBefore) continue;
      retryAfters++;
      const next = list[i + 1];
      if (!next) continue;
      const margin = next[2] - notBefore;
      retryAfterMinMarginMs = Math.min(retryAfterMinMarginMs, margin);
      if (margin < -CLOCK_SLACK_MS) {
        const plan = plans[list[i]![0]]!;
        violations.push(
          `Retry-After undercut: ${plan.name} ${list[i]![1]} came back ${-margin} ms before the receiver allowed`,
        );
      }
    }
  }
  return {
    worstCap,
    worstRate,
    maxSameId: report.maxSameId,
    retryAfters,
    retryAfterMinMarginMs,
    hotLoopSeen,
    violations,
  };
}

/** The reports of several receiver processes as one (endpoint indexes are global). */
export function mergeReports(reports: readonly ReceiverReport[]): ReceiverReport {
  return {
    rows: reports.flatMap((r) => r.rows),
    maxConcurrent: Object.assign({}, ...reports.map((r) => r.maxConcurrent)),
    maxSameId: Math.max(0, ...reports.map((r) => r.maxSameId)),
    overlaps: reports.flatMap((r) => r.overlaps),
    downs: Object.assign({}, ...reports.map((r) => r.downs)),
  };
}
