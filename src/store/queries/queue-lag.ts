import type { Queryable } from '../db.ts';

/**
 * Since when the longest-waiting claimable work has waited (ms), or null when none is due: work
 * due on an active endpoint below its in-flight cap, the claim's own conditions, so an endpoint a
 * slow receiver keeps at its cap is not lag. A hold (rate limit, Retry-After, host cap) makes it
 * claimable only once over: a hold still running gives an instant after `now` (no lag). It walks
 * the claim's partial index over the endpoints due by `now` only.
 */
export async function claimableSince(q: Queryable, now: number): Promise<number | null> {
  const { rows } = await q.query<{ since: Date | null }>(
    `select min(greatest(next_due_at, coalesce(blocked_until, next_due_at))) as since
       from courier_endpoint_queues
      where active and next_due_at <= $1 and in_flight < max_in_flight`,
    [new Date(now)],
  );
  return rows[0]?.since ? rows[0].since.getTime() : null;
}
