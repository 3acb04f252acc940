import type { Queryable } from '../db.ts';
import { toDate } from '../rows.ts';

/**
 * How long past its expiry a secret is kept: each worker compares expiries with its own clock,
 * and one a little behind may still sign with a secret just expired.
 */
export const SECRET_PURGE_MARGIN_MS = 3_600_000;

/**
 * Deletes up to `limit` signing secrets that expired more than the margin before `now` (rotated
 * out, or a deleted endpoint's: migration 0027). Rows another transaction holds (a reseal at
 * start) are left for the next time. Returns how many were deleted.
 */
export async function purgeExpiredSecrets(db: Queryable, now: number, limit: number): Promise<number> {
  const { rowCount } = await db.query(
    `delete from courier_endpoint_secrets where id in (
       select id from courier_endpoint_secrets where expires_at <= $1
        order by expires_at limit $2 for update skip locked)`,
    [toDate(now - SECRET_PURGE_MARGIN_MS), limit],
  );
  return rowCount;
}
