import type { Queryable } from '../db.ts';
import { toDate } from '../rows.ts';

/**
 * Where a delivery whose attempt is announced belongs (message.attempt.exhausted, .failing,
 * .recovered): its event names the application, endpoint and message.
 */
export interface AttemptSubject {
  deliveryId: number;
  appId: string;
  appUid: string | null;
  endpointId: string;
  endpointUid: string | null;
  messageId: string;
  eventId: string | null;
  /** Its payload's retention has run out: the completion fails a retry ("payload expired"). */
  payloadExpired: boolean;
}

interface Row {
  delivery_id: string;
  app_id: string;
  app_uid: string | null;
  endpoint_id: string;
  endpoint_uid: string | null;
  message_id: string;
  event_id: string | null;
  payload_expired: boolean;
}

/**
 * Of these deliveries, those `owner` still holds the lease of, locked until the transaction ends:
 * exactly those its completion, written next in the same transaction, will change. A completion
 * retried after a commit that did take effect finds its lease gone, or, claimed again since by the
 * same owner, its attempt written (`rewritten`: the attempt ids of completions written again), so
 * nothing is announced twice.
 * Delivery rows first, as a completion locks them, then (in the completion) the queue rows.
 * `now`: the completion's, which reads a payload's expiry at it too.
 */
export async function lockAttemptSubjects(
  tx: Queryable,
  owner: string,
  deliveryIds: readonly number[],
  now: number,
  rewritten: readonly string[] = [],
): Promise<AttemptSubject[]> {
  if (deliveryIds.length === 0) return [];
  const { rows } = await tx.query<Row>(
    `select d.id as delivery_id, m.app_id, app.uid as app_uid, d.endpoint_id, e.uid as endpoint_uid,
            d.message_id, m.event_id,
            exists (select 1 from courier_payload_expiries x
                     where x.message_id = d.message_id and x.expires_at <= $4) as payload_expired
       from courier_deliveries d
       join courier_messages m on m.id = d.message_id
       join courier_applications app on app.id = m.app_id
       left join courier_endpoints e on e.id = d.endpoint_id
      where d.id = any($1) and d.lease_owner = $2
        and ($3::text[] is null
             or not exists (select 1 from courier_attempts a
                             where a.message_id = d.message_id and a.id = any($3) and a.delivery_id = d.id))
      order by d.id
      for update of d`,
    [deliveryIds, owner, rewritten.length > 0 ? rewritten : null, toDate(now)],
  );
  return rows.map((r) => ({
    deliveryId: Number(r.delivery_id),
    appId: r.app_id,
    appUid: r.app_uid,
    endpointId: r.endpoint_id,
    endpointUid: r.endpoint_uid,
    messageId: r.message_id,
    eventId: r.event_id,
    payloadExpired: r.payload_expired,
  }));
}
