import type { Queryable } from '../db.ts';

/**
 * Wakes the workers when the surrounding transaction commits (at once outside one): work became
 * claimable that no publish announced (a resume, a replay, a resend, a raised limit).
 */
export async function notifyWorkers(q: Queryable): Promise<void> {
  await q.query('select pg_notify(courier_channel(), $1)', ['']);
}
