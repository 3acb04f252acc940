import type { Queryable } from '../db.ts';

/**
 * The earliest instant at which an active endpoint has work due (ms), or null when none has:
 * the first entry of the claim's own partial index on next_due_at, so one index probe.
 */
export async function oldestDueAt(q: Queryable): Promise<number | null> {
  const { rows } = await q.query<{ at: Date | null }>(
    'select min(next_due_at) as at from courier_endpoint_queues where active',
  );
  return rows[0]?.at ? rows[0].at.getTime() : null;
}
