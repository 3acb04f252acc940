/** The summary table of a chaos run (printed, and pasted into docs/reliability.md). */
import type { FaultEvent } from './cluster.ts';
import type { Measures } from './measures.ts';
import type { Verification } from './verify.ts';

export interface RunFigures {
  command: string;
  messages: number;
  published: number;
  publishRetried: number;
  publishTries: number;
  endpoints: number;
  receivers: number;
  workers: number;
  maxAttempts: number;
  requestTimeoutMs: number;
  leaseMs: number;
  faults: readonly FaultEvent[];
  durationS: number;
  drainS: number;
}

const n = (value: number) => value.toLocaleString('en-US');

export function summaryTable(run: RunFigures, v: Verification, m: Measures): string {
  const count = (kind: FaultEvent['kind']) => run.faults.filter((f) => f.kind === kind).length;
  const pg = run.faults.find((f) => f.kind === 'pg restart');
  const api = run.faults.find((f) => f.kind === 'api restart');
  const other = Object.entries(v.states)
    .filter(([state]) => !['delivered', 'failed', 'expired'].includes(state))
    .map(([state, count]) => `${state} ${count}`)
    .join(', ');
  const rows: [string, string, string][] = [
    ['Load', `${n(run.published)} of ${n(run.messages)} messages published through the API`, ''],
    [
      '',
      `${n(run.publishRetried)} publishes retried (${n(run.publishTries)} POSTs in all, same idempotency key)`,
      '',
    ],
    [
      '',
      `${run.endpoints} endpoints in ${run.receivers} receiver processes; 1 serve + ${run.workers} workers`,
      '',
    ],
    [
      'Policy',
      `max ${run.maxAttempts} attempts, backoff 200 ms doubling to 2 s, timeout ${run.requestTimeoutMs} ms, lease ${run.leaseMs} ms`,
      '',
    ],
    ['Faults', `${count('worker kill')} worker kill -9 (each restarted)`, ''],
    ['', `${count('pg restart')} PostgreSQL restart${pg ? ` (${pg.to - pg.from} ms)` : ''}`, ''],
    ['', `${count('api restart')} API restart${api ? ` (${api.to - api.from} ms)` : ''}`, ''],
    [
      'Deliveries',
      `delivered ${n(v.states.delivered ?? 0)}, failed ${n(v.states.failed ?? 0)}, expired ${n(v.states.expired ?? 0)}`,
      other ? `stuck: ${other}` : 'none stuck',
    ],
    ['Attempts', `${n(v.attemptRows)} counted; ${n(v.refused)} refused or cut while a receiver was down`, ''],
    ['Requests seen', `${n(v.seen)} by the receivers`, ''],
    ['Duplicates', `${n(v.duplicates)} seen but not counted`, `≤ ${n(v.duplicatesBound)} (faults × Σ caps)`],
    [
      '',
      `${n(v.networkOverAnswer)} attempts recorded as network failures although the receiver answered`,
      '',
    ],
    ['In-flight cap', `worst ${m.worstCap.seen} of ${m.worstCap.cap} (${m.worstCap.endpoint})`, '≤ cap'],
    [
      'Rate limit',
      `worst ${m.worstRate.seen}/s of ${m.worstRate.limit}/s (${m.worstRate.endpoint})`,
      '≤ limit',
    ],
    ['Same id at once', String(m.maxSameId), '1'],
    [
      'Retry-After',
      `${n(m.retryAfters)} answers; next request at least ${Number.isFinite(m.retryAfterMinMarginMs) ? m.retryAfterMinMarginMs : '-'} ms after the allowed time`,
      '≥ -50 ms',
    ],
    [
      'Hot loop',
      `${v.hotLoopCounted} counted attempts (${m.hotLoopSeen} requests seen) for one delivery in any 10 min`,
      `≤ ${run.maxAttempts}`,
    ],
    ['Duration', `${run.durationS} s (drain after the load: ${run.drainS} s)`, ''],
    ['Violations', String(v.violations.length + m.violations.length), '0'],
  ];
  const lines = ['| Check | Figure | Limit |', '|---|---|---|'];
  for (const [check, figure, limit] of rows) lines.push(`| ${check} | ${figure} | ${limit} |`);
  return lines.join('\n');
}
