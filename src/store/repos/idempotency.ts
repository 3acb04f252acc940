import type { Queryable } from '../db.ts';
import { toDate, toMs } from '../rows.ts';
import type { PayloadState } from './messages.ts';

/** One idempotency key: the token scope it belongs to, the key, and the request it was used for. */
export interface IdempotencyKey {
  scope: string;
  key: string;
  method: string;
  path: string;
}

export interface StoredResponse {
  fingerprint: string;
  /** null while the first request is still being handled. */
  status: number | null;
  contentType: string | null;
  body: string | null;
  lockedUntil: number;
  /** How the payload of the message the answer published stands (as on Message); null if none. */
  publishedPayload: PayloadState | null;
}

interface Row {
  fingerprint: string;
  status: number | null;
  content_type: string | null;
  body: string | null;
  locked_until: Date;
  message_id: string | null;
  expunged_at: Date | null;
  payload_expires_at: Date | null;
}

/** The key's row, its columns named through `t` (a table alias and a dot) where the query joins others. */
const keyWhere = (t = '') => `${t}scope = $1 and ${t}key = $2 and ${t}method = $3 and ${t}path = $4`;
const KEY_WHERE = keyWhere();
const keyParams = (k: IdempotencyKey) => [k.scope, k.key, k.method, k.path];

/**
 * Takes the key for a new request: non-null when this request is the first (or the previous use
 * expired, or its handler died holding the lock past lockedUntil with the same request, or gave
 * the key back). The primary key makes concurrent repeats race for one row: exactly one wins.
 * token (the lock's end) is what completeIdempotencyKey and releaseIdempotencyKey check.
 * messageId is the id a publish under this key is to take; a repeat taking over the key of a
 * request whose outcome is unknown gets that request's id instead (claimed.messageId), so that its
 * message is found, or published under the same id, rather than published twice.
 */
export async function claimIdempotencyKey(
  db: Queryable,
  k: IdempotencyKey,
  fingerprint: string,
  now: number,
  lockMs: number,
  ttlMs: number,
  messageId: string | null = null,
): Promise<{ messageId: string | null; token: number } | null> {
  const { rows } = await db.query<{ message_id: string | null }>(
    `insert into courier_idempotency_keys as i (scope, key, method, path, fingerprint, locked_until, expires_at, message_id)
     values ($1, $2, $3, $4, $5, $6, $7, $9)
     on conflict (scope, key, method, path) do update
       set fingerprint = excluded.fingerprint, status = null, content_type = null, body = null,
           locked_until = excluded.locked_until, expires_at = excluded.expires_at,
           message_id = case when i.expires_at <= $8 then excluded.message_id
                             else coalesce(i.message_id, excluded.message_id) end
       where i.expires_at <= $8
          or (i.status is null and i.locked_until <= $8 and i.fingerprint = excluded.fingerprint)
     returning message_id`,
    [...keyParams(k), fingerprint, toDate(now + lockMs), toDate(now + ttlMs), toDate(now), messageId],
  );
  return rows[0] ? { messageId: rows[0].message_id, token: now + lockMs } : null;
}

/** The key's stored request and response, with how the payload of the message it published stands. */
export async function findIdempotencyKey(db: Queryable, k: IdempotencyKey): Promise<StoredResponse | null> {
  const { rows } = await db.query<Row>(
    `select k.fingerprint, k.status, k.content_type, k.body, k.locked_until, k.message_id, m.expunged_at,
            (select pe.expires_at from courier_payload_expiries pe where pe.message_id = k.message_id)
              as payload_expires_at
       from courier_idempotency_keys k left join courier_messages m on m.id = k.message_id
      where ${keyWhere('k.')}`,
    keyParams(k),
  );
  const r = rows[0];
  if (!r) return null;
  return {
    fingerprint: r.fingerprint,
    status: r.status,
    contentType: r.content_type,
    body: r.body,
    lockedUntil: toMs(r.locked_until)!,
    publishedPayload:
      r.message_id === null
        ? null
        : { expungedAt: toMs(r.expunged_at), payloadExpiresAt: toMs(r.payload_expires_at) },
  };
}

/**
 * Stores the response. One that published a message names it (messageId), so that deleting that
 * message's payload blanks this copy too; a deletion that came first is seen here.
 */
export async function completeIdempotencyKey(
  db: Queryable,
  k: IdempotencyKey,
  response: { status: number; contentType: string | null; body: string; messageId?: string },
  /** The claim's lockedUntil: a try whose key a repeat took over stores nothing. */
  token: number | null = null,
): Promise<void> {
  await db.query(
    `update courier_idempotency_keys set status = $5, content_type = $6, message_id = $8,
            body = case when exists (select 1 from courier_messages m where m.id = $8 and m.expunged_at is not null)
                        then courier_blank_payload($7) else $7 end
      where ${KEY_WHERE} and status is null and ($9::timestamptz is null or locked_until = $9)`,
    [
      ...keyParams(k),
      response.status,
      response.contentType,
      response.body,
      response.messageId ?? null,
      token === null ? null : toDate(token),
    ],
  );
}

/**
 * Gives the key back (the request failed in a way worth retrying, or its client left): the next
 * repeat of the same request takes it over at once and redoes the work. One whose publish may have
 * committed (keepMessageId) leaves its message id to that repeat, which looks for the message
 * first. Another request under the key is still a mismatch until the key expires.
 */
export async function releaseIdempotencyKey(
  db: Queryable,
  k: IdempotencyKey,
  keepMessageId: boolean,
  token: number | null = null,
): Promise<void> {
  await db.query(
    `update courier_idempotency_keys
        set locked_until = '-infinity', message_id = case when $5 then message_id end
      where ${KEY_WHERE} and status is null and ($6::timestamptz is null or locked_until = $6)`,
    [...keyParams(k), keepMessageId, token === null ? null : toDate(token)],
  );
}

/** Deletes up to `limit` expired keys; returns how many. */
export async function purgeExpiredIdempotencyKeys(
  db: Queryable,
  now: number,
  limit: number,
): Promise<number> {
  const { rowCount } = await db.query(
    `delete from courier_idempotency_keys where ctid in (
       select ctid from courier_idempotency_keys where expires_at <= $1 limit $2)`,
    [toDate(now), limit],
  );
  return rowCount;
}
