import type { Queryable } from '../db.ts';
import { toDate } from '../rows.ts';
import { shareLockEndpoint } from './endpoint-status.ts';
import { wakeEndpoint } from './notify-workers.ts';
import { payloadGone } from './payload-expiry.ts';

/** The (message, endpoint) delivery, locked; a leased one is in flight. */
const LOCK_DELIVERY = `select id, state, lease_owner is not null as leased from courier_deliveries
  where message_id = $1 and endpoint_id = $2 for update`;

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
  const params = [input.messageId, input.endpointId, now];
  // Deleted since it was looked up: nothing would ever send what a resend made for it.
  if (!(await shareLockEndpoint(tx, input.endpointId))) return 'endpoint_gone';
  // A payload past its expiry is as good as expunged, whether or not its sweep has emptied it.
  const { rows: message } = await tx.query<{ expunged: boolean }>(
    `select ${payloadGone('m', '$2')} as expunged
       from courier_messages m where m.id = $1 for key share of m`,
    [input.messageId, now],
  );
  if (message.length === 0) return 'message_gone';
  if (message[0]!.expunged) return 'expunged';
  const { rows: active } = await tx.query<{ active: boolean }>(
    'select active from courier_endpoint_queues where endpoint_id = $1',
    [input.endpointId],
  );
  const fresh = active[0]?.active ? 'pending' : 'held';

  let { rows } = await tx.query<{ id: number; state: string; leased: boolean }>(
    LOCK_DELIVERY,
    params.slice(0, 2),
  );
  if (rows.length === 0) {
    if (input.onlyQueued) return 'not_queued';
    const inserted = await tx.query<{ id: number; state: string }>(
      `insert into courier_deliveries (message_id, endpoint_id, state, next_attempt_at, trigger, created_at, updated_at)
       values ($1, $2, $4, $3, 1, $3, $3)
       on conflict (message_id, endpoint_id) do nothing returning id, state`,
      [...params, fresh],
    );
    if (inserted.rows.length > 0) return wake(tx, input.endpointId, now, inserted.rows[0]!.state);
    // Created concurrently (a publish or another resend): lock it and treat it like any other.
    ({ rows } = await tx.query(LOCK_DELIVERY, params.slice(0, 2)));
  }
  const row = rows[0]!;
  if (row.leased) return 'in_flight';

  const terminal = row.state === 'delivered' || row.state === 'failed' || row.state === 'expired';
  const { rows: updated } = terminal
    ? await tx.query<{ state: string }>(
        `update courier_deliveries
            set state = $3, attempts = 0, give_up_at = null, last_error = null, next_attempt_at = $2,
                trigger = 1, lease_owner = null, lease_expires_at = null, updated_at = $2
          where id = $1 returning state`,
        [row.id, now, fresh],
      )
    : await tx.query<{ state: string }>(
        // A held one keeps its updated_at: a resume gives back the time held since then (give_up_at).
        `update courier_deliveries set next_attempt_at = least(next_attempt_at, $2), trigger = 1,
                updated_at = case when state = 'held' then updated_at else $2 end
          where id = $1 returning state`,
        [row.id, now],
      );
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
