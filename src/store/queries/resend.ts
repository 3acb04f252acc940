import type { Queryable } from '../db.ts';
import { toDate } from '../rows.ts';
import { shareLockEndpoint } from './endpoint-status.ts';
import { wakeEndpoint } from './notify-workers.ts';
import { payloadGone } from './payload-expiry.ts';

/** The (message, endpoint) delivery, locked; a leased one is in flight. */
const LOCK_DELIVERY = `select id, state, lease_owner is not null as leased from courier_deliveries
  where message_id = $1 and endpoint_id = $2 for update`;

const DEAD = `d.state in ('delivered', 'failed', 'expired')`;
/**
 * Makes these deliveries (locked, none leased) due now as manual attempts ($2 the instant): a dead
 * one (failed, expired; delivered in rows of older releases) gets a fresh budget, in state $3
 * (pending, or held while the endpoint is not active); a waiting or held one keeps its state,
 * attempts and give-up time, and a held one its updated_at (a resume gives back the time held
 * since then, give_up_at).
 */
export const RESEND_DELIVERIES = `update courier_deliveries d
   set state = case when ${DEAD} then $3 else d.state end,
       attempts = case when ${DEAD} then 0 else d.attempts end,
       give_up_at = case when ${DEAD} then null else d.give_up_at end,
       last_error = case when ${DEAD} then null else d.last_error end,
       next_attempt_at = case when ${DEAD} then $2 else least(d.next_attempt_at, $2) end,
       lease_expires_at = case when ${DEAD} then null else d.lease_expires_at end,
       trigger = 1, updated_at = case when d.state = 'held' then d.updated_at else $2 end
 where d.id = any($1::bigint[]) returning d.state`;

/**
 * A delivery to the endpoint ($2) for each of these messages that has none, due now ($3) as a
 * manual attempt with a fresh budget, in state $4. One there already, committed or not (a
 * completion writing a leased row, a publish or another resend making one), is left as it is:
 * tested before the insert, so the statement waits only for a row another resend or replay is
 * inserting, never for a completion's uncommitted update or delete. Made no earlier than its
 * message (published at $5, as lockLiveMessages read it), whatever the clock of the process that
 * published it: a recovery by publish time passes by, in the index, the dead letters made before
 * its range.
 */
export const RESEND_CREATE = `insert into courier_deliveries (message_id, endpoint_id, state, next_attempt_at, trigger, created_at, updated_at)
  select u.id, $2, $4, $3, 1, greatest($3::timestamptz, u.published_at), $3
    from unnest($1::text[], $5::timestamptz[]) as u(id, published_at)
   where not exists (select 1 from courier_deliveries d where d.message_id = u.id and d.endpoint_id = $2)
   order by u.id collate "C"
  on conflict (message_id, endpoint_id) do nothing returning state`;

/**
 * Of these messages, those still there whose payload is not gone, each key-share locked as
 * resendDelivery locks one, in id order: an expunge, a payload-expiry sweep or a retention pass
 * that has one locked (FOR UPDATE) is waited for, and its new version read (one expunged or
 * deleted is left out). Probed one by one (the subquery locks, so it is not flattened into a
 * join): a filter on the whole table read every row's expiry, O(messages) per call. Each with
 * when it was published.
 */
export async function lockLiveMessages(
  tx: Queryable,
  messageIds: readonly string[],
  now: Date,
): Promise<Map<string, Date>> {
  const { rows } = await tx.query<{ id: string; created_at: Date }>(
    `select m.id, m.created_at from unnest($1::text[]) as u(id)
      cross join lateral (select m.id, m.created_at from courier_messages m
                           where m.id = u.id and not ${payloadGone('m', '$2')}
                          for key share of m) m`,
    [[...new Set(messageIds)].sort(), now],
  );
  return new Map(rows.map((m) => [m.id, m.created_at]));
}

/** The state a resent delivery takes: held while the endpoint is paused or disabled. */
export async function freshState(tx: Queryable, endpointId: string): Promise<'pending' | 'held'> {
  const { rows } = await tx.query<{ active: boolean }>(
    'select active from courier_endpoint_queues where endpoint_id = $1',
    [endpointId],
  );
  return rows[0]?.active ? 'pending' : 'held';
}

/**
 * What a resend did: scheduled now, parked until the endpoint is resumed, left to the attempt under
 * way, or nothing because the message or the endpoint is gone (deleted since it was looked up) or
 * its payload was expunged or has expired.
 */
export type ResendOutcome =
  | 'scheduled'
  | 'held'
  | 'in_flight'
  | 'message_gone'
  | 'endpoint_gone'
  | 'expunged'
  | 'not_queued';

/**
 * Makes the (message, endpoint) delivery due now as a manual attempt. Call inside a transaction.
 *  - dead-lettered (failed, expired): a fresh attempt budget (attempts 0, no give-up time);
 *  - pending or held: due now, attempts and give-up time kept;
 *  - in flight: untouched (the attempt under way is the resend);
 *  - absent (delivered: its attempt log is its record; or the endpoint did not match, or did not
 *    exist, at publish time): created, which is a fresh budget too.
 * Held instead of pending while the endpoint is not active. Lock order as everywhere: the
 * endpoint row (shared), the message row (its key: retention then passes it by), the delivery
 * row, then the endpoint's queue row (to wake it).
 */
export async function resendDelivery(
  tx: Queryable,
  input: {
    messageId: string;
    endpointId: string;
    now: number;
    /**
     * Only a delivery still queued (waiting, held, in flight or dead): one found delivered (no
     * row) is 'not_queued', for a caller that chose it by where it stood before it locked it.
     */
    onlyQueued?: boolean;
  },
): Promise<ResendOutcome> {
  const now = toDate(input.now);
  const params = [input.messageId, input.endpointId];
  // Deleted since it was looked up: nothing would ever send what a resend made for it.
  if (!(await shareLockEndpoint(tx, input.endpointId))) return 'endpoint_gone';
  // A payload past its expiry is as good as expunged, whether or not its sweep has emptied it.
  const { rows: message } = await tx.query<{ expunged: boolean; created_at: Date }>(
    `select ${payloadGone('m', '$2')} as expunged, m.created_at
       from courier_messages m where m.id = $1 for key share of m`,
    [input.messageId, now],
  );
  if (message.length === 0) return 'message_gone';
  if (message[0]!.expunged) return 'expunged';
  const fresh = await freshState(tx, input.endpointId);

  let { rows } = await tx.query<{ id: number; state: string; leased: boolean }>(LOCK_DELIVERY, params);
  // None: made here. Made meanwhile by another writer (a publish, a resend): locked and treated like
  // any other. Deleted meanwhile by a completion (delivered): made again.
  for (let tries = 0; rows.length === 0; tries++) {
    if (input.onlyQueued) return 'not_queued';
    if (tries === 3)
      throw new Error(`the delivery of ${input.messageId} to ${input.endpointId} kept changing`);
    const inserted = await tx.query<{ state: string }>(RESEND_CREATE, [
      [input.messageId],
      input.endpointId,
      now,
      fresh,
      [message[0]!.created_at],
    ]);
    if (inserted.rows.length > 0) return wake(tx, input.endpointId, now, inserted.rows[0]!.state);
    ({ rows } = await tx.query(LOCK_DELIVERY, params));
  }
  const row = rows[0]!;
  if (row.leased) return 'in_flight';

  const { rows: updated } = await tx.query<{ state: string }>(RESEND_DELIVERIES, [[row.id], now, fresh]);
  return wake(tx, input.endpointId, now, updated[0]!.state);
}

async function wake(tx: Queryable, endpointId: string, now: Date, state: string): Promise<ResendOutcome> {
  if (state !== 'pending') return 'held';
  await wakeEndpoint(tx, endpointId, now);
  return 'scheduled';
}

/** The delivery ids of these messages (ids or event ids) to one endpoint: for replaying chosen dead letters. */
export async function deliveryIdsOf(
  db: Queryable,
  input: { appId: string; endpointId: string; messageIds: readonly string[] },
): Promise<number[]> {
  const { rows } = await db.query<{ id: number }>(
    `select d.id from courier_deliveries d join courier_messages m on m.id = d.message_id
      where d.endpoint_id = $1 and m.app_id = $2 and (m.id = any($3) or m.event_id = any($3))
      order by d.id`,
    [input.endpointId, input.appId, input.messageIds],
  );
  return rows.map((r) => Number(r.id));
}
