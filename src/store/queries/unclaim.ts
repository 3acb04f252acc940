import type { Queryable } from '../db.ts';
import { toDate } from '../rows.ts';

/** One claim of a delivery: its id and the lease_expires_at the claim set. */
export interface Lease {
  id: number;
  leaseUntil: number;
  /** Given back due then (or as it was, if later), rather than as it was. */
  dueAt?: number;
}

export interface Released {
  released: number;
  /** Still under these leases, their rows held by another transaction (a resend, an expunge): try again. */
  busy: number[];
}

/**
 * Gives claimed deliveries back untouched: same attempt count, same next_attempt_at (or a later
 * dueAt). Used when the worker itself failed (exception, database error, shutdown) before a request went out.
 * Only the leases named: a give-back queued for one claim cannot end a later claim of the delivery.
 * One whose payload's retention has run out by `now` fails instead ("payload expired", 0025).
 */
export async function release(
  db: Queryable,
  owner: string,
  leases: readonly Lease[],
  now: number,
): Promise<Released> {
  if (leases.length === 0) return { released: 0, busy: [] };
  const due = leases.some((l) => l.dueAt !== undefined)
    ? leases.map((l) => (l.dueAt === undefined ? null : toDate(l.dueAt)))
    : null;
  const { rows } = await db.query<{ released: number; busy: string[] }>(
    'select released, busy from courier_release($1, $2, $3, $4, $5)',
    [leases.map((l) => l.id), leases.map((l) => toDate(l.leaseUntil)), owner, due, toDate(now)],
  );
  return { released: rows[0]!.released, busy: rows[0]!.busy.map(Number) };
}

/**
 * Takes over deliveries whose lease ran out (their worker crashed or hung); one whose payload's
 * retention has run out fails instead.
 */
export async function reapExpiredLeases(db: Queryable, now: number, limit = 1000): Promise<number> {
  const { rows } = await db.query<{ n: number }>('select courier_unclaim(null, null, $1, $2, $1) as n', [
    toDate(now),
    limit,
  ]);
  return rows[0]!.n;
}
