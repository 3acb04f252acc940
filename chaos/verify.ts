/**
 * Checks every published message against Courier's rows and the receivers' logs: nothing lost,
 * every delivery terminal as the policy dictates, every counted attempt seen by its receiver, and
 * every request the receiver saw either counted or explained by a fault (a duplicate).
 */
import { type EndpointPlan, kindOf, type Outcome, verdict } from './catalog.ts';
import type { FaultEvent } from './cluster.ts';
import type { AttemptRow, CourierRows } from './collect.ts';
import { append } from './measures.ts';
import type { ReceiverReport, SeenRow } from './receiver.ts';

export interface VerifyInput {
  plans: readonly EndpointPlan[];
  messages: number;
  /** seq → message id, as the API answered. */
  published: ReadonlyMap<number, string>;
  courier: CourierRows;
  report: ReceiverReport;
  faults: readonly FaultEvent[];
  maxAttempts: number;
  requestTimeoutMs: number;
  leaseMs: number;
}

export interface Verification {
  states: Record<string, number>;
  attemptRows: number;
  seen: number;
  /** Counted attempts that never reached a receiver (refused or cut while it was down). */
  refused: number;
  duplicates: number;
  duplicatesBound: number;
  /** Counted attempts that Courier saw fail on the network although the receiver had answered. */
  networkOverAnswer: number;
  /** Most counted attempts of one delivery in any 10-minute window. */
  hotLoopCounted: number;
  violations: string[];
}

/**
 * Arrival at the receiver relative to the attempt's recorded start and end: a request reaches the
 * receiver before the worker has its outcome, however long a loaded machine kept the worker from
 * writing it (a window of 1.5 s after the start once flagged seven first attempts in CI that the
 * receiver had answered). The margins cover the two processes' clocks and a response on its way.
 */
const MATCH_BEFORE_MS = 100;
const MATCH_AFTER_MS = 1_500;
const NOT_REACHING = new Set(['connection_refused', 'connect_timeout']);
const TERMINAL = new Set(['delivered', 'failed', 'expired']);

function courierOutcome(a: AttemptRow): Outcome {
  return a.failure ? 'network' : (a.status ?? 'network');
}

function receiverOutcome(row: SeenRow, timeoutMs: number): Outcome {
  const answer = row[3];
  return typeof answer === 'number' && row[4] < timeoutMs ? answer : 'network';
}

/** Windows in which a fault could leave a request seen but uncounted. */
function faultWindows(faults: readonly FaultEvent[], timeoutMs: number, leaseMs: number): [number, number][] {
  return faults.map((f) => [
    f.from - timeoutMs - 2_000,
    f.to + (f.kind === 'pg restart' ? leaseMs + 2_000 : 500),
  ]);
}

export function verify(input: VerifyInput): Verification {
  const { plans, courier, report, maxAttempts, requestTimeoutMs } = input;
  const violations: string[] = [];
  const fail = (what: string) => violations.push(what);

  // Nothing lost, nothing published twice.
  const seqCount = new Map<number, number>();
  for (const seq of courier.messages.values()) seqCount.set(seq, (seqCount.get(seq) ?? 0) + 1);
  for (let seq = 0; seq < input.messages; seq++) {
    const n = seqCount.get(seq) ?? 0;
    if (n === 0) fail(`lost: message seq ${seq} is not in the database`);
    if (n > 1) fail(`duplicate publish: seq ${seq} stored ${n} times despite one idempotency key`);
    const id = input.published.get(seq);
    if (id && courier.messages.get(id) !== seq)
      fail(`lost: the API answered ${id} for seq ${seq}; not stored`);
  }
  const deliveriesOf = new Map<string, number>();
  for (const d of courier.deliveries) deliveriesOf.set(d.messageId, (deliveriesOf.get(d.messageId) ?? 0) + 1);
  for (const [id, seq] of courier.messages) {
    if (deliveriesOf.get(id) !== 1)
      fail(`message ${id} (seq ${seq}) has ${deliveriesOf.get(id) ?? 0} deliveries`);
  }

  const attemptsOf = new Map<number, AttemptRow[]>();
  for (const a of courier.attempts) append(attemptsOf, a.deliveryId, a);
  const seenOf = new Map<string, SeenRow[]>();
  for (const row of report.rows) append(seenOf, `${row[0]} ${row[1]}`, row);

  const windows = faultWindows(input.faults, requestTimeoutMs, input.leaseMs);
  const states: Record<string, number> = {};
  let refused = 0;
  let duplicates = 0;
  let networkOverAnswer = 0;
  let hotLoopCounted = 0;
  for (const d of courier.deliveries) {
    states[d.state] = (states[d.state] ?? 0) + 1;
    const plan = plans[d.endpointIndex]!;
    const kind = kindOf(plan.kind);
    const seq = courier.messages.get(d.messageId);
    const label = `${plan.name} ${d.messageId} (seq ${seq})`;
    if (seq !== undefined && seq % plans.length !== d.endpointIndex)
      fail(`${label}: delivered to the wrong endpoint`);
    const attempts = attemptsOf.get(d.id) ?? [];
    if (attempts.length !== d.attempts) {
      fail(`${label}: deliveries.attempts = ${d.attempts} but ${attempts.length} attempt rows`);
    }
    attempts.forEach((a, i) => {
      if (a.number !== i + 1) fail(`${label}: attempt rows numbered ${attempts.map((x) => x.number)}`);
    });

    // Match each counted attempt that reached the receiver to the request it saw, in order.
    const seen = (seenOf.get(`${d.endpointIndex} ${d.messageId}`) ?? []).sort((a, b) => a[2] - b[2]);
    const unmatched: SeenRow[] = [];
    let cursor = 0;
    let overAnswered = 0;
    const downs = report.downs[d.endpointIndex] ?? [];
    const whileDown = (at: number) =>
      downs.some(([from, to]) => at >= from - 1_000 && at <= (to ?? Date.now()) + 1_000);
    for (const a of attempts) {
      if (a.failure && NOT_REACHING.has(a.failure)) {
        refused++;
        if (!whileDown(a.startedAt))
          fail(`${label}: attempt ${a.number} was ${a.failure} while its receiver was up`);
        continue;
      }
      while (cursor < seen.length && seen[cursor]![2] < a.startedAt - MATCH_BEFORE_MS)
        unmatched.push(seen[cursor++]!);
      const row = seen[cursor];
      if (!row || row[2] > a.startedAt + a.durationMs + MATCH_AFTER_MS) {
        // A receiver going down cuts connections, including one a request was just being written to.
        if (a.failure && whileDown(a.startedAt)) {
          refused++;
          continue;
        }
        fail(
          `${label}: attempt ${a.number} (${a.status ?? a.failure}) was counted but never reached the receiver`,
        );
        continue;
      }
      cursor++;
      const mine = courierOutcome(a);
      const theirs = receiverOutcome(row, requestTimeoutMs);
      if (mine === 'network' && theirs !== 'network') overAnswered++;
      else if (mine !== theirs)
        fail(`${label}: attempt ${a.number} recorded ${mine}, the receiver answered ${theirs}`);
    }
    unmatched.push(...seen.slice(cursor));
    networkOverAnswer += overAnswered;
    duplicates += unmatched.length;
    for (const row of unmatched) {
      if (!windows.some(([from, to]) => row[2] >= from && row[2] <= to)) {
        fail(
          `${label}: a request at ${new Date(row[2]).toISOString()} was seen but not counted, with no fault near it`,
        );
      }
    }

    // Terminal as the documented policy dictates for the outcomes Courier counted.
    const expected = verdict(attempts.map(courierOutcome), maxAttempts);
    if (!TERMINAL.has(d.state)) {
      fail(`${label}: stuck in ${d.state} after ${d.attempts} attempts`);
    } else if (d.state !== expected) {
      fail(
        `${label}: state ${d.state}, the policy dictates ${expected} after [${attempts.map(courierOutcome)}]`,
      );
    } else if (kind.expect && unmatched.length === 0 && overAnswered === 0) {
      const exact = kind.expect(maxAttempts);
      if (d.state !== exact.state || d.attempts !== exact.attempts) {
        fail(
          `${label}: ${d.state} after ${d.attempts} attempts; the script dictates ${exact.state} after ${exact.attempts}`,
        );
      }
    }

    const times = attempts.map((a) => a.startedAt);
    let lo = 0;
    for (let hi = 0; hi < times.length; hi++) {
      while (times[hi]! - times[lo]! >= 600_000) lo++;
      hotLoopCounted = Math.max(hotLoopCounted, hi - lo + 1);
    }
  }
  if (hotLoopCounted > maxAttempts)
    fail(`hot loop: a delivery made ${hotLoopCounted} attempts in 10 minutes`);

  // Duplicates must stay within what the faults could have had in flight.
  const capSum = plans.reduce((sum, p) => sum + (p.maxInFlight ?? 10), 0);
  const duplicatesBound = input.faults.length * capSum;
  if (duplicates > duplicatesBound) fail(`${duplicates} duplicates exceed the bound ${duplicatesBound}`);
  return {
    states,
    attemptRows: courier.attempts.length,
    seen: report.rows.length,
    refused,
    duplicates,
    duplicatesBound,
    networkOverAnswer,
    hotLoopCounted,
    violations,
  };
}
