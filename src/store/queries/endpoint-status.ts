import type { Queryable } from '../db.ts';
import { toDate } from '../rows.ts';
import { notifyWorkers } from './notify-workers.ts';

/**
 * The endpoint row, then its queue row (the store's lock order): publishes in progress finish
 * first and new ones wait, and claims skip the endpoint until we commit.
 */
export async function lockEndpoint(db: Queryable, endpointId: string): Promise<void> {
  await db.query('select 1 from courier_endpoints where id = $1 for update', [endpointId]);
  await db.query('select 1 from courier_endpoint_queues where endpoint_id = $1 for update', [endpointId]);
}

/**
 * Waits for a pause or resume of the endpoint in progress (lockEndpoint) and keeps the next one
 * out until this transaction ends: a statement after it reads whether the endpoint is active as it
 * now is. For whatever makes a delivery pending or held; read without it, a resume committing
 * meanwhile left that delivery held on an enabled endpoint, for good. Says whether the endpoint is
 * still there (not deleted).
 */
export async function shareLockEndpoint(tx: Queryable, endpointId: string): Promise<boolean> {
  const { rows } = await tx.query<{ live: boolean }>(
    'select deleted_at is null as live from courier_endpoints where id = $1 for share',
    [endpointId],
  );
  return rows[0]?.live ?? false;
}

/**
 * Whether the endpoint, locked (lockEndpoint), still runs a streak of at least `streak`: a streak's
 * alarm is raised by a completion already committed, and a success, a new URL, a resume or a
 * deletion may have ended the streak since.
 */
export async function streakStands(tx: Queryable, endpointId: string, streak: number): Promise<boolean> {
  const { rows } = await tx.query(
    `select 1 from courier_endpoint_queues q join courier_endpoints e on e.id = q.endpoint_id
      where q.endpoint_id = $1 and q.active and q.failure_streak >= $2 and e.deleted_at is null`,
    [endpointId, streak],
  );
  return rows.length > 0;
}

/**
 * Whether the endpoint, locked (lockEndpoint), is still in the run of failures that began at
 * `since` (a success, a new URL or a resume since ends it) and is there, outside the application
 * uid `spare`.
 */
export async function failingStands(
  tx: Queryable,
  endpointId: string,
  since: number,
  spare: string,
): Promise<boolean> {
  const { rows } = await tx.query(
    `select 1 from courier_endpoint_queues q
       join courier_endpoints e on e.id = q.endpoint_id join courier_applications a on a.id = e.app_id
      where q.endpoint_id = $1 and q.active and q.failing_since = $2 and e.deleted_at is null
        and a.uid is distinct from $3`,
    [endpointId, toDate(since), spare],
  );
  return rows.length > 0;
}

/**
 * Stops deliveries to an endpoint without losing any: its pending deliveries become held,
 * new messages for it are stored as held, and nothing is claimed until it is resumed.
 * `paused` is Courier's own doing (a streak of permanent failures) or its owner's (the pause
 * route); `disabled` is its owner's (Svix's flag) or Courier's (every attempt failing for days),
 * and may replace a pause: held since the pause. The operator's (`byOperator`, the admin token)
 * makes the hold theirs: then only they enable it again (takeOverHold for one already held).
 * Returns false when the endpoint was neither enabled nor (for `disabled`) paused, or is deleted.
 */
export async function holdEndpoint(
  db: Queryable,
  endpointId: string,
  status: 'paused' | 'disabled',
  reason: string | null,
  now: number,
  byOperator = false,
): Promise<boolean> {
  await lockEndpoint(db, endpointId);
  const { rowCount } = await db.query(
    `update courier_endpoints
        set status = $2, status_reason = $3, updated_at = $4, held_since = coalesce(held_since, $4),
            held_by_operator = $5 or (status <> 'enabled' and held_by_operator)
      where id = $1 and deleted_at is null and (status = 'enabled' or (status = 'paused' and $2 = 'disabled'))`,
    [endpointId, status, reason, toDate(now), byOperator],
  );
  if (rowCount === 0) return false;
  await db.query('update courier_endpoint_queues set active = false where endpoint_id = $1', [endpointId]);
  await db.query(
    // Leased ones are in flight: their completion holds them (a retry) or ends them.
    `update courier_deliveries set state = 'held', updated_at = $2
      where endpoint_id = $1 and state = 'pending' and lease_owner is null`,
    [endpointId, toDate(now)],
  );
  return true;
}

/**
 * The operator's pause or disable of an endpoint already held (by its owner, by Courier) makes the
 * hold theirs; false when it was not held, already theirs, or is deleted.
 */
export async function takeOverHold(db: Queryable, endpointId: string, now: number): Promise<boolean> {
  const { rowCount } = await db.query(
    `update courier_endpoints set held_by_operator = true, updated_at = $2
      where id = $1 and deleted_at is null and status <> 'enabled' and not held_by_operator`,
    [endpointId, toDate(now)],
  );
  return (rowCount ?? 0) > 0;
}

/**
 * Resumes an endpoint: held deliveries become pending again, spread over spreadMs so they do not
 * hit the receiver as one wave. The spread is a hash of each delivery id with the given seed
 * (from the injected random source), so it is reproducible under test.
 * Returns the number of deliveries released, or null when the endpoint was already enabled.
 */
export async function resumeEndpoint(
  db: Queryable,
  endpointId: string,
  now: number,
  spreadMs: number,
  seed: number,
): Promise<number | null> {
  await lockEndpoint(db, endpointId);
  const { rows } = await db.query<{ held_since: Date | null }>(
    `with before as (select held_since from courier_endpoints where id = $1)
     update courier_endpoints set status = 'enabled', status_reason = null, updated_at = $2, held_since = null
      where id = $1 and status <> 'enabled' and deleted_at is null
     returning (select held_since from before)`,
    [endpointId, toDate(now)],
  );
  if (rows.length === 0) return null;
  // The time held does not count against a delivery's retry window (give_up_at): resumed, it has
  // what it had left when it was held. Held since the later of the endpoint's hold and its own last
  // change: a retry held after the pause was held then; one given back held keeps an older
  // updated_at; and a hold by the previous release (which set no held_since) stamped the deliveries.
  const released = await db.query(
    `update courier_deliveries
        set state = 'pending', updated_at = $2,
            next_attempt_at = greatest(next_attempt_at, $2::timestamptz + make_interval(
              secs => (abs(hashtext(id::text || ':' || $4::text)::bigint) % 1000000) / 1000000.0 * $3 / 1000.0)),
            give_up_at = give_up_at + greatest(interval '0', $2::timestamptz - greatest($5::timestamptz, updated_at))
      where endpoint_id = $1 and state = 'held'`,
    [endpointId, toDate(now), spreadMs, seed, rows[0]!.held_since],
  );
  await db.query(
    `update courier_endpoint_queues
        set active = true, failure_streak = 0,
            -- An owner's resume is a go: it lifts a wait the receiver asked for (Retry-After) too.
            blocked_until = null, retry_after_until = null,
            next_due_at = (select min(next_attempt_at) from courier_deliveries
                            where endpoint_id = $1 and state = 'pending' and lease_owner is null)
      where endpoint_id = $1`,
    [endpointId],
  );
  await notifyWorkers(db);
  return released.rowCount;
}

export async function heldCount(db: Queryable, endpointId: string): Promise<number> {
  const { rows } = await db.query<{ n: number }>(
    `select count(*)::int as n from courier_deliveries where endpoint_id = $1 and state = 'held'`,
    [endpointId],
  );
  return rows[0]!.n;
}
