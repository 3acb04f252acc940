import type { Clock } from '../clock.ts';
import type { Database } from '../store/db.ts';
import type { StreakAlarm } from '../store/queries/complete.ts';
import { holdEndpoint, lockEndpoint, streakStands } from '../store/queries/endpoint-status.ts';
import { type OperationalEvent, recordOperationalEvents } from '../store/queries/operational-events.ts';
import { findApplication } from '../store/repos/applications.ts';
import { getEndpointById } from '../store/repos/endpoints.ts';
import { endpointEvent } from './endpoint-events.ts';

const STREAK_REASON = 'consecutive permanent failures';

/** Whether an endpoint's status reason is a streak's pause (pauseForStreak), not its owner's. */
export function pausedByStreak(statusReason: string | null): boolean {
  return statusReason?.endsWith(STREAK_REASON) === true;
}

/**
 * A streak of permanent failures means the URL is most likely dead: pause the endpoint (its
 * deliveries are held, not lost, for the retention period), record `endpoint.paused`, and tell the operator.
 */
export async function pauseForStreak(
  db: Database,
  alarm: StreakAlarm,
  clock: Clock,
  /** To be sent to the operator webhook (OperatorRelay). */
  relay: boolean,
): Promise<OperationalEvent | null> {
  const now = clock.now();
  const reason = `paused after ${alarm.failureStreak} ${STREAK_REASON}`;
  const event = await db.transaction(async (tx) => {
    await lockEndpoint(tx, alarm.endpointId);
    if (!(await streakStands(tx, alarm.endpointId, alarm.failureStreak))) return null;
    if (!(await holdEndpoint(tx, alarm.endpointId, 'paused', reason, now))) return null;
    // Held by holdEndpoint, which found it live: it and its application are there.
    const endpoint = (await getEndpointById(tx, alarm.endpointId))!;
    const application = (await findApplication(tx, endpoint.appId))!;
    const recorded = endpointEvent('endpoint.paused', application, endpoint, now, {
      url: endpoint.url,
      failureStreak: alarm.failureStreak,
      trigger: 'automatic',
      reason,
    });
    await recordOperationalEvents(tx, [recorded], relay);
    return recorded;
  });
  return event;
}
