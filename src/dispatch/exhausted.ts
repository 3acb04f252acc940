import { newId } from '../ids.ts';
import type { Logger } from '../logger.ts';
import type { Transaction } from '../store/db.ts';
import type { Completion } from '../store/queries/complete.ts';
import { type DeadLettered, deadLettered } from '../store/queries/dead-lettered.ts';
import { type OperationalEvent, recordOperationalEvents } from '../store/queries/operational-events.ts';
import type { OperationalEventSink } from './auto-pause.ts';

/** Svix's name for a delivery that will not be tried again: its receiver refused it for good, or it ran out of attempts or time. */
export const EXHAUSTED = 'message.attempt.exhausted';

export const isDeadLetter = (c: Completion): boolean => c.state === 'failed' || c.state === 'expired';

/** Svix's event data, plus why the delivery stopped (failed: refused for good; expired: out of attempts or time). */
function exhaustedEvent(d: DeadLettered, now: number): OperationalEvent {
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
        id: d.attemptId,
        responseStatusCode: d.responseStatusCode,
        timestamp: new Date(d.attemptedAt).toISOString(),
      },
      state: d.state,
      attempts: d.attempts,
      reason: d.lastError,
    },
    createdAt: now,
  };
}

/**
 * Records message.attempt.exhausted for each of these completions that the transaction wrote as a
 * dead letter, and hands it to the sink (the operator webhook), in the completion's own transaction:
 * a crash cannot keep the dead letter and lose its event. A savepoint keeps a failure here from
 * undoing the completions, which would otherwise be retried, and fail, for ever: it is logged, and
 * the dead letters stay visible and replayable without their events.
 */
export async function reportDeadLetters(
  tx: Transaction,
  completions: readonly Completion[],
  now: number,
  sink: OperationalEventSink | undefined,
  log: Logger,
): Promise<void> {
  await tx.query('savepoint courier_dead_letter_events');
  try {
    const written = completions.map((c) => ({ deliveryId: c.deliveryId, attemptId: c.attempt.id }));
    const events = (await deadLettered(tx, written)).map((d) => exhaustedEvent(d, now));
    await recordOperationalEvents(tx, events);
    if (sink) for (const event of events) await sink(tx, event);
    await tx.query('release savepoint courier_dead_letter_events');
  } catch (error) {
    await tx.query('rollback to savepoint courier_dead_letter_events');
    log.error(
      { err: error, deliveries: completions.map((c) => c.deliveryId) },
      `could not record ${EXHAUSTED}; the dead letters are kept without it`,
    );
  }
}
