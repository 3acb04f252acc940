import { prepared, type Queryable } from '../db.ts';
import { toMs } from '../rows.ts';

const NEXT_DUE = prepared(
  'courier_next_due',
  `select min(greatest(next_due_at, coalesce(blocked_until, next_due_at))) as at
     from courier_endpoint_queues
    where active and next_due_at is not null and in_flight < max_in_flight`,
);

/** The earliest instant any endpoint with spare capacity has work due: the worker's timer target. */
export async function nextDueAt(db: Queryable): Promise<number | null> {
  const { rows } = await db.query<{ at: Date | null }>(NEXT_DUE);
  return toMs(rows[0]?.at ?? null);
}
