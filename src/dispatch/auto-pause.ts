import type { Clock } from '../clock.ts';
import type { Database } from '../store/db.ts';
import type { FailingRun, StreakAlarm } from '../store/queries/complete.ts';
import { failingStands, holdEndpoint, lockEndpoint, streakStands } from '../store/queries/endpoint-status.ts';
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

/**
 * Every attempt to the endpoint has failed since `run.failingSince`, for longer than the policy
 * allows (failingTooLong): disable it as Svix does (its deliveries held, new messages no longer
 * stored for it), and record `endpoint.disabled` with Svix's `failSince` and trigger `automatic`.
 * The endpoints of the application uid `spare` (the operator's: no notice could say so, and new
 * notices would not be stored) are left enabled. Null when the run has ended meanwhile.
 */
export async function disableFailing(
  db: Database,
  run: FailingRun,
  clock: Clock,
  /** To be sent to the operator webhook (OperatorRelay). */
  relay: boolean,
  spare: string,
): Promise<OperationalEvent | null> {
  const now = clock.now();
  const failSince = new Date(run.failingSince).toISOString();
  const reason = `disabled after every attempt failed since ${failSince}`;
  return db.transaction(async (tx) => {
    await lockEndpoint(tx, run.endpointId);
    if (!(await failingStands(tx, run.endpointId, run.failingSince, spare))) return null;
    if (!(await holdEndpoint(tx, run.endpointId, 'disabled', reason, now))) return null;
    const endpoint = (await getEndpointById(tx, run.endpointId))!;
    const application = (await findApplication(tx, endpoint.appId))!;
    const recorded = endpointEvent('endpoint.disabled', application, endpoint, now, {
      failSince,
      trigger: 'automatic',
      reason,
    });
    await recordOperationalEvents(tx, [recorded], relay);
    return recorded;
  });
}
