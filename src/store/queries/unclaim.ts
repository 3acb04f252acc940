import type { Queryable } from '../db.ts';
import { toDate } from '../rows.ts';

/**
 * Gives claimed deliveries back untouched: same attempt count, same next_attempt_at.
 * Used when the worker itself failed (exception, database error, shutdown) before a request went out.
 */
export async function release(db: Queryable, owner: string, ids: readonly number[]): Promise<number> {
  if (ids.length === 0) return 0;
  const { rows } = await db.query<{ n: number }>('select courier_unclaim($1, $2, null, $3) as n', [
    ids,
    owner,
    ids.length,
  ]);
  return rows[0]!.n;
}

/** Takes over deliveries whose lease ran out (their worker crashed or hung). */
export async function reapExpiredLeases(db: Queryable, now: number, limit = 1000): Promise<number> {
  const { rows } = await db.query<{ n: number }>('select courier_unclaim(null, null, $1, $2) as n', [
    toDate(now),
    limit,
  ]);
  return rows[0]!.n;
}
