import type { Queryable } from '../db.ts';
import { toDate, toMs } from '../rows.ts';

/** Where a pass through the due payloads has got to: (expiry instant, message id). */
export interface ExpiryCursor {
  at: number;
  id: string;
}

/**
 * Messages whose payload's retention has run out by `now` and is still kept, soonest first, after
 * `after`; through the partial index that holds only messages which asked for a retention.
 */
export async function duePayloads(
  db: Queryable,
  pass: { now: number; after: ExpiryCursor | null; limit: number },
): Promise<ExpiryCursor[]> {
  const { rows } = await db.query<{ id: string; payload_expires_at: Date }>(
    `select id, payload_expires_at from courier_messages
      where payload_expires_at <= $1
        and ($2::timestamptz is null or (payload_expires_at, id) > ($2::timestamptz, $3::text))
      order by payload_expires_at, id limit $4`,
    [toDate(pass.now), pass.after ? toDate(pass.after.at) : null, pass.after?.id ?? null, pass.limit],
  );
  return rows.map((r) => ({ id: r.id, at: toMs(r.payload_expires_at)! }));
}
