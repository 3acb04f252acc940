import { prepared, type Queryable } from '../db.ts';
import type { Attempt } from '../repos/attempts.ts';
import { toDate } from '../rows.ts';
import { ASYNC_COMMIT } from './async-commit.ts';

/** One finished attempt: the delivery's transition and the attempt row, written together. */
export interface Completion {
  deliveryId: number;
  state: 'pending' | 'delivered' | 'failed' | 'expired';
  attempts: number;
  nextAttemptAt: number | null;
  giveUpAt: number;
  lastError: string | null;
  streak: 'reset' | 'increment' | 'unchanged';
  attempt: Omit<Attempt, 'deliveryId' | 'messageId' | 'endpointId'>;
}

export interface StreakAlarm {
  endpointId: string;
  failureStreak: number;
}

const COMPLETE = prepared(
  'courier_complete_batch',
  `select c.* from ${ASYNC_COMMIT}, courier_complete_batch($1, $2, $3, $4) c`,
);

const iso = (ms: number | null) => (ms === null ? null : toDate(ms).toISOString());

export interface CompletionOutcome {
  /** Endpoints whose streak of permanent failures reached pauseAfter. */
  alarms: StreakAlarm[];
  /** Some endpoint touched has deliveries due and room for them now (its cap had held them back). */
  claimable: boolean;
}

/**
 * Writes a batch of completions in one round trip (courier_complete_batch). Deliveries whose lease
 * this owner no longer holds are left alone.
 */
export async function complete(
  db: Queryable,
  owner: string,
  now: number,
  completions: readonly Completion[],
  pauseAfter: number,
): Promise<CompletionOutcome> {
  if (completions.length === 0) return { alarms: [], claimable: false };
  const items = completions.map((c, seq) => ({
    seq,
    delivery_id: c.deliveryId,
    state: c.state,
    attempts: c.attempts,
    next_attempt_at: iso(c.nextAttemptAt),
    give_up_at: iso(c.giveUpAt),
    last_error: c.lastError,
    streak: c.streak,
    attempt_id: c.attempt.id,
    number: c.attempt.number,
    trigger: c.attempt.trigger,
    url: c.attempt.url,
    started_at: iso(c.attempt.startedAt),
    duration_ms: Math.round(c.attempt.durationMs),
    status_code: c.attempt.statusCode,
    failure_kind: c.attempt.failureKind,
    response_headers: c.attempt.responseHeaders,
    // PostgreSQL text cannot hold NUL characters.
    response_body: c.attempt.responseBody?.replaceAll('\u0000', '\uFFFD') ?? null,
    decision: c.attempt.decision,
    delay_ms: c.attempt.delayMs,
    reason: c.attempt.reason,
    detail: c.attempt.detail,
  }));
  const { rows } = await db.query<{
    endpoint_id: string;
    failure_streak: number;
    alarm: boolean;
    claimable: boolean;
  }>(COMPLETE, [owner, toDate(now), JSON.stringify(items), pauseAfter]);
  return {
    alarms: rows
      .filter((r) => r.alarm)
      .map((r) => ({ endpointId: r.endpoint_id, failureStreak: r.failure_streak })),
    claimable: rows.some((r) => r.claimable),
  };
}
