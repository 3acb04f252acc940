import type { Queryable } from '../db.ts';
import { toDate, toMs } from '../rows.ts';

/**
 * SQL: the payload of the message row `alias` is gone, expunged or past the retention it asked for
 * at `now` (a parameter): as good as expunged, whether or not its sweep has emptied it yet.
 */
export const payloadGone = (alias: string, now: string): string =>
  `(${alias}.expunged_at is not null or exists (
     select 1 from courier_payload_expiries x where x.message_id = ${alias}.id and x.expires_at <= ${now}))`;

/** Where a pass through the due payloads has got to: (expiry instant, message id). */
export interface ExpiryCursor {
  at: number;
  id: string;
}

/**
 * Messages whose payload's retention has run out by `now` and is still kept, soonest first, after
 * `after` (courier_payload_expiries: only messages which asked for a retention have a row).
 */
export async function duePayloads(
  db: Queryable,
  pass: { now: number; after: ExpiryCursor | null; limit: number },
): Promise<ExpiryCursor[]> {
  const { rows } = await db.query<{ message_id: string; expires_at: Date }>(
    `select message_id, expires_at from courier_payload_expiries
      where expires_at <= $1
        and ($2::timestamptz is null or (expires_at, message_id) > ($2::timestamptz, $3::text))
      order by expires_at, message_id limit $4`,
    [toDate(pass.now), pass.after ? toDate(pass.after.at) : null, pass.after?.id ?? null, pass.limit],
  );
  return rows.map((r) => ({ id: r.message_id, at: toMs(r.expires_at)! }));
}
