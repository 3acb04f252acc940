import type { Queryable } from '../db.ts';
import { toMs } from '../rows.ts';

/** A delivery a completion has just dead-lettered, with what its message.attempt.exhausted event says. */
export interface DeadLettered {
  deliveryId: number;
  state: 'failed' | 'expired';
  attempts: number;
  lastError: string | null;
  appId: string;
  appUid: string | null;
  endpointId: string;
  endpointUid: string | null;
  messageId: string;
  eventId: string | null;
  attemptId: string;
  /** 0 when no response arrived (a network failure), as in Svix's events. */
  responseStatusCode: number;
  attemptedAt: number;
}

interface Row {
  delivery_id: string;
  state: 'failed' | 'expired';
  attempts: number;
  last_error: string | null;
  app_id: string;
  app_uid: string | null;
  endpoint_id: string;
  endpoint_uid: string | null;
  message_id: string;
  event_id: string | null;
  attempt_id: string;
  status_code: number | null;
  started_at: Date;
}

/**
 * Of the given completions (delivery id and attempt id), those written as a dead letter, in the
 * transaction that wrote them: a completion is written only while its worker still holds the lease,
 * and its attempt row only with it, so the attempt row's presence says the completion took effect.
 */
export async function deadLettered(
  tx: Queryable,
  written: readonly { deliveryId: number; attemptId: string }[],
): Promise<DeadLettered[]> {
  if (written.length === 0) return [];
  const { rows } = await tx.query<Row>(
    `select d.id as delivery_id, d.state, d.attempts, d.last_error, m.app_id, app.uid as app_uid,
            d.endpoint_id, e.uid as endpoint_uid, d.message_id, m.event_id, a.id as attempt_id,
            a.status_code, a.started_at
       from unnest($1::bigint[], $2::text[]) as u(delivery_id, attempt_id)
       join courier_deliveries d on d.id = u.delivery_id and d.state in ('failed', 'expired')
       join courier_attempts a on a.message_id = d.message_id and a.id = u.attempt_id
       join courier_messages m on m.id = d.message_id
       join courier_applications app on app.id = m.app_id
       left join courier_endpoints e on e.id = d.endpoint_id
      order by d.id`,
    [written.map((w) => w.deliveryId), written.map((w) => w.attemptId)],
  );
  return rows.map((r) => ({
    deliveryId: Number(r.delivery_id),
    state: r.state,
    attempts: r.attempts,
    lastError: r.last_error,
    appId: r.app_id,
    appUid: r.app_uid,
    endpointId: r.endpoint_id,
    endpointUid: r.endpoint_uid,
    messageId: r.message_id,
    eventId: r.event_id,
    attemptId: r.attempt_id,
    responseStatusCode: r.status_code ?? 0,
    attemptedAt: toMs(r.started_at)!,
  }));
}
