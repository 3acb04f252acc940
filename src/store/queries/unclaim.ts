import type { Queryable } from '../db.ts';
import { toDate } from '../rows.ts';

/** One claim of a delivery: its id and the lease_expires_at the claim set. */
export interface Lease {
  id: number;
  leaseUntil: number;
}

export interface Released {
  released: number;
  /** Still under these leases, their rows held by another transaction (a resend, an expunge): try again. */
  busy: number[];
}

/**
 * Gives claimed deliveries back untouched: same attempt count, same next_attempt_at.
 * Used when the worker itself failed (exception, database error, shutdown) before a request went out.
 * Only the leases named: a give-back queued for one claim cannot end a later claim of the delivery.
 */
export async function release(db: Queryable, owner: string, leases: readonly Lease[]): Promise<Released> {
  if (leases.length === 0) return { released: 0, busy: [] };
  const { rows } = await db.query<{ released: number; busy: string[] }>(
    'select released, busy from courier_release($1, $2, $3)',
    [leases.map((l) => l.id), leases.map((l) => toDate(l.leaseUntil)), owner],
  );
  return { released: rows[0]!.released, busy: rows[0]!.busy.map(Number) };
}

/** Takes over deliveries whose lease ran out (their worker crashed or hung). */
export async function reapExpiredLeases(db: Queryable, now: number, limit = 1000): Promise<number> {
  const { rows } = await db.query<{ n: number }>('select courier_unclaim(null, null, $1, $2) as n', [
    toDate(now),
    limit,
  ]);
  return rows[0]!.n;
}
