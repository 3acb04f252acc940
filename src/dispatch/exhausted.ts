import { newId } from '../ids.ts';
import type { Logger } from '../logger.ts';
import { DatabaseUnavailableError, type Transaction } from '../store/db.ts';
import { isConflictAbort } from '../store/errors.ts';
import type { Completion } from '../store/queries/complete.ts';
import { type DeadLetterSubject, lockDeadLetters } from '../store/queries/dead-lettered.ts';
import { type OperationalEvent, recordOperationalEvents } from '../store/queries/operational-events.ts';

/** Svix's name for a delivery that will not be tried again: its receiver refused it for good, or it ran out of attempts or time. */
export const EXHAUSTED = 'message.attempt.exhausted';

export const isDeadLetter = (c: Completion): boolean => c.state === 'failed' || c.state === 'expired';

/** Svix's event data, plus why the delivery stopped (failed: refused for good; expired: out of attempts or time). */
function exhaustedEvent(d: DeadLetterSubject, c: Completion, now: number): OperationalEvent {
  return {
    id: newId('opev', now),
    type: EXHAUSTED,
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
        timestamp: new Date(c.attempt.startedAt).toISOString(),
      },
      state: c.state,
      attempts: c.attempts,
      reason: c.lastError,
    },
    createdAt: now,
  };
}

/**
 * Records message.attempt.exhausted for each of these dead-lettering completions that `owner` can
 * still write, in the transaction that then writes the completions: a crash cannot keep a dead
 * letter and lose its event. `relay`: the operator webhook's relay is to send them. One statement
 * for the batch's events, under a savepoint that keeps a failure here from undoing the completions,
 * which would otherwise be retried, and fail, for ever: it is logged, and the dead letters stay
 * visible and replayable without their events. Returns how many were recorded.
 */
export async function reportDeadLetters(
  tx: Transaction,
  owner: string,
  completions: readonly Completion[],
  now: number,
  relay: boolean,
  log: Logger,
): Promise<number> {
  await tx.query('savepoint courier_dead_letter_events');
  try {
    const byDelivery = new Map(completions.map((c) => [c.deliveryId, c]));
    const rewritten = completions.filter((c) => c.rewrite).map((c) => c.attempt.id);
    const subjects = await lockDeadLetters(tx, owner, [...byDelivery.keys()], rewritten);
    const events = subjects.map((d) => exhaustedEvent(d, byDelivery.get(d.deliveryId)!, now));
    await recordOperationalEvents(tx, events, relay);
    await tx.query('release savepoint courier_dead_letter_events');
    return events.length;
  } catch (error) {
    // The database's own trouble (a deadlock, a lost connection) is not the events' fault: the
    // whole write is tried again, events and all.
    if (isConflictAbort(error) || error instanceof DatabaseUnavailableError) throw error;
    await tx.query('rollback to savepoint courier_dead_letter_events');
    log.error(
      { err: error, deliveries: completions.map((c) => c.deliveryId) },
      `could not record ${EXHAUSTED}; the dead letters are kept without it`,
    );
    return 0;
  }
}
