import type { Queryable } from '../db.ts';

/**
 * Wakes the workers when the surrounding transaction commits (at once outside one): work became
 * claimable that no publish announced (a resume, a replay, a resend, a raised limit).
 */
export async function notifyWorkers(q: Queryable): Promise<void> {
  await q.query('select pg_notify(courier_channel(), $1)', ['']);
}

/** The payload that asks the workers' relays, not their claims, to look: operational events wait. */
export const RELAY_NOTICE = 'relay';

/** The payload prefix of a worker's check that notifications reach it: no work, for any worker. */
export const HEARING_CHECK = 'hearing-check:';

/** A notification only the worker that sent it looks for: `token` starts with HEARING_CHECK. */
export async function sendHearingCheck(q: Queryable, token: string): Promise<void> {
  await q.query('select pg_notify(courier_channel(), $1)', [token]);
}

/**
 * Wakes every worker's relay at the commit: for events recorded outside a worker (the API's), as
 * a worker nudges its own relay after the commits that record some.
 */
export async function notifyRelays(q: Queryable): Promise<void> {
  await q.query('select pg_notify(courier_channel(), $1)', [RELAY_NOTICE]);
}

/**
 * For a transaction that made deliveries of the endpoint pending, due by `now`: makes the endpoint
 * look due by then and wakes the workers at commit. Its queue row is held KEY SHARE first, as a
 * publish holds it, and read after that in a statement of its own: a claim meanwhile takes the
 * endpoint's other due work and sets its next due instant from what it can see, without these
 * deliveries. One under way is waited for, and its result read and brought forward; a later one
 * skips the endpoint until the commit. (Read in the statement that made the deliveries pending,
 * the queue row was as the statement's snapshot had it, and the claim's result was left as it
 * was: the deliveries waited for the endpoint's next publish.) Call after the delivery rows are
 * locked: the store's lock order.
 */
export async function wakeEndpoint(tx: Queryable, endpointId: string, now: Date): Promise<void> {
  await tx.query('select 1 from courier_endpoint_queues where endpoint_id = $1 for key share', [endpointId]);
  await tx.query(
    `update courier_endpoint_queues set next_due_at = $2
      where endpoint_id = $1 and active and (next_due_at is null or next_due_at > $2)`,
    [endpointId, now],
  );
  await notifyWorkers(tx);
}
