import type { Queryable } from '../db.ts';
import { toDate, toMs } from '../rows.ts';
import type { Page } from './applications.ts';

/** One recorded attempt (courier_attempts), written by the worker when an attempt completes. */
export interface Attempt {
  id: string;
  deliveryId: number;
  messageId: string;
  endpointId: string;
  number: number;
  trigger: number;
  url: string;
  startedAt: number;
  durationMs: number;
  statusCode: number | null;
  failureKind: string | null;
  responseHeaders: Record<string, string> | null;
  responseBody: string | null;
  decision: 'delivered' | 'retry' | 'failed' | 'expired';
  delayMs: number | null;
  reason: string | null;
  detail: string;
}

interface Row {
  id: string;
  delivery_id: number;
  message_id: string;
  endpoint_id: string;
  number: number;
  trigger: number;
  url: string;
  started_at: Date;
  duration_ms: number;
  status_code: number | null;
  failure_kind: string | null;
  response_headers: Record<string, string> | null;
  response_body: string | null;
  decision: Attempt['decision'];
  delay_ms: number | string | null;
  reason: string | null;
  detail: string;
}

const fromRow = (r: Row): Attempt => ({
  id: r.id,
  deliveryId: Number(r.delivery_id),
  messageId: r.message_id,
  endpointId: r.endpoint_id,
  number: r.number,
  trigger: r.trigger,
  url: r.url,
  startedAt: toMs(r.started_at)!,
  durationMs: r.duration_ms,
  statusCode: r.status_code,
  failureKind: r.failure_kind,
  responseHeaders: r.response_headers,
  responseBody: r.response_body,
  decision: r.decision,
  delayMs: r.delay_ms === null ? null : Number(r.delay_ms),
  reason: r.reason,
  detail: r.detail,
});

export interface AttemptFilter {
  endpointId?: string;
  messageId?: string;
  /** true: delivered attempts only; false: the others. */
  delivered?: boolean;
  /** 200 for 2xx and so on; 0 for attempts without a response. */
  statusCodeClass?: number;
  startedBefore?: number;
  startedAfter?: number;
  /** Filters on the attempted message. */
  channel?: string;
  tag?: string;
  eventTypes?: readonly string[];
}

/** Attempts of one endpoint or one message (at least one of the two must be given). */
export async function listAttempts(
  db: Queryable,
  filter: AttemptFilter,
  opts: { limit: number; after?: string; before?: string; descending?: boolean },
): Promise<Page<Attempt>> {
  if (!filter.endpointId && !filter.messageId) throw new Error('listAttempts needs an endpoint or a message');
  const { rows } = await db.query<Row>(
    `select a.* from courier_attempts a
      where ($1::text is null or a.endpoint_id = $1) and ($2::text is null or a.message_id = $2)
        and ($3::text is null or a.id > $3) and ($4::text is null or a.id < $4)
        and ($5::boolean is null or (a.decision = 'delivered') = $5)
        and ($6::timestamptz is null or a.started_at < $6) and ($7::timestamptz is null or a.started_at > $7)
        and (($8::text is null and $9::text is null and $10::text[] is null) or exists (
          select 1 from courier_messages m where m.id = a.message_id
             and ($8::text is null or $8 = any(m.channels)) and ($9::text is null or $9 = any(m.tags))
             and ($10::text[] is null or m.event_type = any($10))))
        and ($12::integer is null or coalesce(a.status_code, 0) / 100 * 100 = $12)
      order by a.id ${opts.descending ? 'desc' : 'asc'} limit $11`,
    [
      filter.endpointId ?? null,
      filter.messageId ?? null,
      opts.after ?? null,
      opts.before ?? null,
      filter.delivered ?? null,
      filter.startedBefore === undefined ? null : toDate(filter.startedBefore),
      filter.startedAfter === undefined ? null : toDate(filter.startedAfter),
      filter.channel ?? null,
      filter.tag ?? null,
      filter.eventTypes?.length ? filter.eventTypes : null,
      opts.limit + 1,
      filter.statusCodeClass ?? null,
    ],
  );
  return { data: rows.slice(0, opts.limit).map(fromRow), done: rows.length <= opts.limit };
}

export async function findAttempt(
  db: Queryable,
  messageId: string,
  attemptId: string,
): Promise<Attempt | null> {
  const { rows } = await db.query<Row>('select * from courier_attempts where message_id = $1 and id = $2', [
    messageId,
    attemptId,
  ]);
  return rows[0] ? fromRow(rows[0]) : null;
}

/**
 * Deletes what an attempt kept of its response (body and headers), for a receiver that answered
 * with what should not be stored. False when the message has no such attempt.
 */
export async function expungeAttemptResponse(
  db: Queryable,
  messageId: string,
  attemptId: string,
): Promise<boolean> {
  const { rowCount } = await db.query(
    'update courier_attempts set response_body = null, response_headers = null where message_id = $1 and id = $2',
    [messageId, attemptId],
  );
  return rowCount > 0;
}
