import { prepared, type Queryable } from '../db.ts';
import type { Attempt } from '../repos/attempts.ts';
import { toDate, toMs } from '../rows.ts';
import { ASYNC_COMMIT } from './async-commit.ts';

/** One finished attempt: the delivery's transition and the attempt row, written together. */
export interface Completion {
  deliveryId: number;
  /** The delivery's message: what names its attempt, with the attempt's id, when written again. */
  messageId?: string;
  /**
   * Written before without a known outcome (the connection lost with the answer): the first
   * write may have committed, so its attempt is looked up first (courier_complete_rows, 0022).
   */
  rewrite?: boolean;
  state: 'pending' | 'delivered' | 'failed' | 'expired';
  attempts: number;
  nextAttemptAt: number | null;
  giveUpAt: number;
  lastError: string | null;
  streak: 'reset' | 'increment' | 'unchanged';
  /** The receiver asked (Retry-After) not to be sent anything before then: the endpoint waits (0025). */
  holdEndpointUntil?: number;
  /**
   * Its claim was overtaken while it could not be written (markOvertaken): only its attempt is
   * logged (logOvertaken); the delivery stays as what happened since left it.
   */
  overtaken?: boolean;
  attempt: Omit<Attempt, 'deliveryId' | 'messageId' | 'endpointId'>;
}

export interface StreakAlarm {
  endpointId: string;
  failureStreak: number;
}

/** An active endpoint whose attempts have all failed since `failingSince` (migration 0031). */
export interface FailingRun {
  endpointId: string;
  failingSince: number;
}

// The columns by name: a later release adding one to the function leaves this statement's result
// type, which a prepared statement keeps, as it was (0A000 "cached plan must not change result type").
const COMPLETE = prepared(
  'courier_complete_rows',
  `select c.endpoint_id, c.failure_streak, c.alarm, c.claimable, c.wake_at, c.failing_since
     from ${ASYNC_COMMIT}, courier_complete_rows($1, $2, $3, $4) c`,
);

/** PostgreSQL text cannot hold NUL characters. */
const storableBody = (body: string | null) => body?.replaceAll('\u0000', '\uFFFD') ?? null;

/** Unix milliseconds, as a Date would hold them (it drops fractions). */
const ms = (at: number | null) => (at === null ? null : Math.trunc(at));

/**
 * One completion as a row of values, in the column order courier_complete_rows reads (listed in
 * migration 0009; the 22nd, since 0022, names the message of one written again; the 23rd, since
 * 0025, holds the endpoint): half the bytes
 * of an object with named fields, and a third of the parsing.
 */
function completionRow(c: Completion): unknown[] {
  const a = c.attempt;
  return [
    c.deliveryId,
    c.state,
    c.attempts,
    ms(c.nextAttemptAt),
    ms(c.giveUpAt),
    c.lastError,
    c.streak,
    a.id,
    a.number,
    a.trigger,
    a.url,
    ms(a.startedAt),
    Math.round(a.durationMs),
    a.statusCode,
    a.failureKind,
    a.responseHeaders,
    storableBody(a.responseBody),
    a.decision,
    a.delayMs,
    a.reason,
    a.detail,
    c.rewrite ? (c.messageId ?? null) : null,
    ms(c.holdEndpointUntil ?? null),
  ];
}

export interface CompletionOutcome {
  /** Endpoints whose streak of permanent failures reached pauseAfter. */
  alarms: StreakAlarm[];
  /** The active endpoints touched whose last attempts all failed: whether to disable them is the policy's (failingTooLong). */
  failing: FailingRun[];
  /** Some endpoint touched has deliveries due and room for them now (its cap had held them back). */
  claimable: boolean;
  /**
   * The earliest instant work falls due later on an endpoint with room: claims leave an endpoint
   * at its cap out of their next due time, so nothing else would wake a worker for it.
   */
  wakeAt: number | null;
}

/**
 * Writes a batch of completions in one round trip (courier_complete_rows). Deliveries whose lease
 * this owner no longer holds are left alone.
 */
export async function complete(
  db: Queryable,
  owner: string,
  now: number,
  completions: readonly Completion[],
  pauseAfter: number,
): Promise<CompletionOutcome> {
  if (completions.length === 0) return { alarms: [], failing: [], claimable: false, wakeAt: null };
  const { rows } = await db.query<{
    endpoint_id: string;
    failure_streak: number;
    alarm: boolean;
    claimable: boolean;
    wake_at: Date | null;
    failing_since: Date | null;
  }>(COMPLETE, [owner, toDate(now), JSON.stringify(completions.map(completionRow)), pauseAfter]);
  return {
    alarms: rows
      .filter((r) => r.alarm)
      .map((r) => ({ endpointId: r.endpoint_id, failureStreak: r.failure_streak })),
    failing: rows
      .filter((r) => r.failing_since !== null)
      .map((r) => ({ endpointId: r.endpoint_id, failingSince: toMs(r.failing_since)! })),
    claimable: rows.some((r) => r.claimable),
    wakeAt: rows.reduce<number | null>((earliest, r) => {
      const at = toMs(r.wake_at);
      return at !== null && (earliest === null || at < earliest) ? at : earliest;
    }, null),
  };
}

/**
 * The attempts of overtaken completions, logged as history: the requests were made, but what they
 * decided no longer applies. An attempt already there (its first write did commit) is left as is,
 * and so is one whose delivery is gone (delivered or dropped since).
 */
export async function logOvertaken(db: Queryable, completions: readonly Completion[]): Promise<void> {
  for (const c of completions) {
    const a = c.attempt;
    await db.query(
      `insert into courier_attempts (id, delivery_id, message_id, endpoint_id, number, trigger, url, started_at,
         duration_ms, status_code, failure_kind, response_headers, response_body, decision, delay_ms, reason, detail)
       select $2, d.id, d.message_id, d.endpoint_id, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15
         from courier_deliveries d where d.id = $1
       on conflict do nothing`,
      [
        c.deliveryId,
        a.id,
        a.number,
        a.trigger,
        a.url,
        toDate(a.startedAt),
        Math.round(a.durationMs),
        a.statusCode,
        a.failureKind,
        a.responseHeaders === null ? null : JSON.stringify(a.responseHeaders),
        storableBody(a.responseBody),
        a.decision,
        a.delayMs,
        a.reason,
        a.detail,
      ],
    );
  }
}
