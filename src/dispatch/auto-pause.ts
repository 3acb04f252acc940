import type { Clock } from '../clock.ts';
import type { Database, Queryable } from '../store/db.ts';
import type { FailingRun, StreakAlarm } from '../store/queries/complete.ts';
import { failingStands, holdEndpoint, lockEndpoint, streakStands } from '../store/queries/endpoint-status.ts';
import { type OperationalEvent, recordOperationalEvents } from '../store/queries/operational-events.ts';
import { findApplication } from '../store/repos/applications.ts';
import { type Endpoint, getEndpointById } from '../store/repos/endpoints.ts';
import { endpointEvent } from './endpoint-events.ts';

const STREAK_REASON = 'consecutive permanent failures';

/** Whether an endpoint's status reason is a streak's pause (pauseForStreak), not its owner's. */
export function pausedByStreak(statusReason: string | null): boolean {
  return statusReason?.endsWith(STREAK_REASON) === true;
}

/**
 * Holds an endpoint by Courier's own decision, in one transaction under the endpoint's lock: only
 * if `stands` still holds there (a completion already committed raised the alarm, and a success, a
 * new URL, a resume or a deletion may have ended it since), and records `type` with the endpoint's
 * `extra` data. Null when it no longer stands or the endpoint was not enabled.
 */
async function holdAutomatically(
  db: Database,
  endpointId: string,
  stands: (tx: Queryable) => Promise<boolean>,
  hold: { status: 'paused' | 'disabled'; type: 'endpoint.paused' | 'endpoint.disabled'; reason: string },
  extra: (endpoint: Endpoint) => Record<string, unknown>,
  now: number,
  relay: boolean,
): Promise<OperationalEvent | null> {
  return db.transaction(async (tx) => {
    await lockEndpoint(tx, endpointId);
    if (!(await stands(tx))) return null;
    if (!(await holdEndpoint(tx, endpointId, hold.status, hold.reason, now))) return null;
    // Held by holdEndpoint, which found it live: it and its application are there.
    const endpoint = (await getEndpointById(tx, endpointId))!;
    const application = (await findApplication(tx, endpoint.appId))!;
    const recorded = endpointEvent(hold.type, application, endpoint, now, {
      ...extra(endpoint),
      trigger: 'automatic',
      reason: hold.reason,
    });
    await recordOperationalEvents(tx, [recorded], relay);
    return recorded;
  });
}

/**
 * A streak of permanent failures means the URL is most likely dead: pause the endpoint (its
 * deliveries are held, not lost, for the retention period), record `endpoint.paused`, and tell the operator.
 */
export function pauseForStreak(
  db: Database,
  alarm: StreakAlarm,
  clock: Clock,
  /** To be sent to the operator webhook (OperatorRelay). */
  relay: boolean,
): Promise<OperationalEvent | null> {
  const reason = `paused after ${alarm.failureStreak} ${STREAK_REASON}`;
  return holdAutomatically(
    db,
    alarm.endpointId,
    (tx) => streakStands(tx, alarm.endpointId, alarm.failureStreak),
    { status: 'paused', type: 'endpoint.paused', reason },
    (endpoint) => ({ url: endpoint.url, failureStreak: alarm.failureStreak }),
    clock.now(),
    relay,
  );
}

/**
 * Every attempt to the endpoint has failed since `run.failingSince`, for longer than the policy
 * allows (failingTooLong): disable it as Svix does (its deliveries held, new messages no longer
 * stored for it), and record `endpoint.disabled` with Svix's `failSince` and trigger `automatic`.
 * The endpoints of the application uid `spare` (the operator's: no notice could say so, and new
 * notices would not be stored) are left enabled. Null when the run has ended meanwhile.
 */
export function disableFailing(
  db: Database,
  run: FailingRun,
  clock: Clock,
  /** To be sent to the operator webhook (OperatorRelay). */
  relay: boolean,
  spare: string,
): Promise<OperationalEvent | null> {
  const failSince = new Date(run.failingSince).toISOString();
  return holdAutomatically(
    db,
    run.endpointId,
    (tx) => failingStands(tx, run.endpointId, run.failingSince, spare),
    {
      status: 'disabled',
      type: 'endpoint.disabled',
      reason: `disabled after every attempt failed since ${failSince}`,
    },
    () => ({ failSince }),
    clock.now(),
    relay,
  );
}
