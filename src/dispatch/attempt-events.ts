import { newId } from '../ids.ts';
import type { Logger } from '../logger.ts';
import { DatabaseUnavailableError, type Transaction } from '../store/db.ts';
import { isConflictAbort } from '../store/errors.ts';
import { type AttemptSubject, lockAttemptSubjects } from '../store/queries/attempt-subjects.ts';
import type { Completion } from '../store/queries/complete.ts';
import { type OperationalEvent, recordOperationalEvents } from '../store/queries/operational-events.ts';

/** Svix's name for a delivery that will not be tried again: its receiver refused it for good, or it ran out of attempts or time. */
export const EXHAUSTED = 'message.attempt.exhausted';
/** Svix's name for a delivery failing again and again, still being retried: sent at its FAILING_AT-th failure. */
export const FAILING = 'message.attempt.failing';
/** Svix's name for a delivery that got through after FAILING was announced. */
export const RECOVERED = 'message.attempt.recovered';
/** The failed attempt that announces a delivery failing: the fourth, as in Svix. */
export const FAILING_AT = 4;

/**
 * The event a completion announces, if any. Attempts count from the last fresh budget (a replay or
 * resend of a dead letter starts again from 0), so a delivery is announced failing once per budget,
 * and recovered only when it was.
 */
export function attemptEventType(c: Completion): string | null {
  if (c.state === 'failed' || c.state === 'expired') return EXHAUSTED;
  if (c.state === 'pending' && c.attempts === FAILING_AT) return FAILING;
  if (c.state === 'delivered' && c.attempts > FAILING_AT) return RECOVERED;
  return null;
}

/**
 * Svix's event data (appId, appUid, endpointId, msgId, msgEventId, lastAttempt), plus Courier's
 * own: the endpoint's uid, the attempts made, and for a dead letter why it stopped (failed: refused
 * for good; expired: out of attempts or time), for a failing one when it is tried next.
 */
function attemptEvent(type: string, d: AttemptSubject, c: Completion, now: number): OperationalEvent {
  const since = type === EXHAUSTED ? { state: c.state } : {};
  const next = type === FAILING && c.nextAttemptAt !== null ? { nextAttempt: iso(c.nextAttemptAt) } : {};
  return {
    id: newId('opev', now),
    type,
    appId: d.appId,
    endpointId: d.endpointId,
    data: {
      appId: d.appId,
      appUid: d.appUid,
      endpointId: d.endpointId,
      endpointUid: d.endpointUid,
      msgId: d.messageId,
      msgEventId: d.eventId,
      lastAttempt: {
        id: c.attempt.id,
        // 0 when no response arrived (a network failure), as in Svix's events.
        responseStatusCode: c.attempt.statusCode ?? 0,
        timestamp: iso(c.attempt.startedAt),
      },
      ...since,
      attempts: c.attempts,
      ...(type === RECOVERED ? {} : { reason: c.lastError }),
      ...next,
    },
    createdAt: now,
  };
}

const iso = (ms: number) => new Date(ms).toISOString();

/**
 * Records the events of these completions (attemptEventType) that `owner` can still write, in the
 * transaction that then writes the completions: a crash cannot keep a dead letter and lose its
 * event. `relay`: the operator webhook's relay is to send them. One statement for the batch's
 * events, under a savepoint that keeps a failure here from undoing the completions, which would
 * otherwise be retried, and fail, for ever: it is logged, and the deliveries go on (dead letters
 * stay visible and replayable) without their events. Returns how many were recorded.
 */
export async function reportAttemptEvents(
  tx: Transaction,
  owner: string,
  completions: readonly Completion[],
  now: number,
  relay: boolean,
  log: Logger,
): Promise<number> {
  const announced = new Map<number, { type: string; completion: Completion }>();
  for (const c of completions) {
    const type = attemptEventType(c);
    if (type) announced.set(c.deliveryId, { type, completion: c });
  }
  if (announced.size === 0) return 0;
  await tx.query('savepoint courier_attempt_events');
  try {
    const rewritten = completions.filter((c) => c.rewrite).map((c) => c.attempt.id);
    const subjects = await lockAttemptSubjects(tx, owner, [...announced.keys()], now, rewritten);
    const events = subjects.flatMap((d) => {
      const { type, completion } = announced.get(d.deliveryId)!;
      // Not failing but failed: its completion ends it as "payload expired", which, as the expiry
      // sweep's failures, is the retention the publisher asked for, not an announced dead letter.
      return type === FAILING && d.payloadExpired ? [] : [attemptEvent(type, d, completion, now)];
    });
    await recordOperationalEvents(tx, events, relay);
    await tx.query('release savepoint courier_attempt_events');
    return events.length;
  } catch (error) {
    // The database's own trouble (a deadlock, a lost connection) is not the events' fault: the
    // whole write is tried again, events and all.
    if (isConflictAbort(error) || error instanceof DatabaseUnavailableError) throw error;
    await tx.query('rollback to savepoint courier_attempt_events');
    const types = [...new Set([...announced.values()].map((a) => a.type))].sort().join(', ');
    log.error(
      { err: error, deliveries: [...announced.keys()] },
      `could not record ${types}; the deliveries go on without it`,
    );
    return 0;
  }
}
