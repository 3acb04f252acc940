import type { Queryable } from '../db.ts';
import { toDate } from '../rows.ts';

export interface PurgePass {
  /** Messages looked at (at most the limit); fewer than the limit: the range is exhausted. */
  scanned: number;
  /** Messages deleted, with their attempts and deliveries. */
  purged: number;
  /** The last id looked at: where the next call goes on. */
  lastId: string | null;
  /** Attempt and delivery rows deleted with the messages (migration 0026). */
  rowsDeleted: number;
}

/**
 * Deletes messages with ids below `before` (made before the retention cutoff) and above `after`,
 * looking at up to `limit` of them, unless a delivery keeps them (migration 0014 says which); with
 * `rowBudget`, no more of them than their attempts and deliveries fit in it, one at least (0026).
 */
export async function purgeMessages(
  db: Queryable,
  pass: { before: string; after: string; limit: number; now: number; rowBudget?: number },
): Promise<PurgePass> {
  const { rows } = await db.query<{
    scanned: number;
    purged: number;
    last_id: string | null;
    rows_deleted: number;
  }>('select scanned, purged, last_id, rows_deleted from courier_purge_messages($1, $2, $3, $4, $5)', [
    pass.before,
    pass.after,
    pass.limit,
    toDate(pass.now),
    pass.rowBudget ?? null,
  ]);
  const row = rows[0]!;
  return { scanned: row.scanned, purged: row.purged, lastId: row.last_id, rowsDeleted: row.rows_deleted };
}

/** Deletes up to `limit` operational events with ids below `before`; returns how many. */
export async function purgeOperationalEvents(db: Queryable, before: string, limit: number): Promise<number> {
  const { rows } = await db.query<{ n: number }>('select courier_purge_operational_events($1, $2) as n', [
    before,
    limit,
  ]);
  return rows[0]!.n;
}
