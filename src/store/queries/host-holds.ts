import { prepared, type Queryable } from '../db.ts';
import { toDate } from '../rows.ts';

/**
 * Ends holds a claim put on endpoints whose receiving host was full (courier_claim_batch, 0030),
 * on the hosts of the endpoints given, whose slots were just freed: else those endpoints would wait
 * out the hold with their host's slots unused. One endpoint per slot freed, the longest due first,
 * so that the next claims are not spent on a crowd of them finding the host full again. A hold
 * something else has since lengthened (a rate limit, a Retry-After) stays, and so does one on an
 * endpoint whose Retry-After has not run out. Rows another transaction holds are skipped, not
 * waited for (no lock-order deadlock between two workers): their hold runs out on its own.
 */
const RELEASE_HOST_HOLDS = prepared(
  'courier_release_host_holds',
  `update courier_endpoint_queues q set blocked_until = null, host_held_until = null
   where q.endpoint_id in (
     select h.endpoint_id from courier_endpoint_queues h
     where h.host in (select f.host from courier_endpoint_queues f where f.endpoint_id = any($1::text[]))
       and h.host_held_until is not null and h.blocked_until = h.host_held_until
       and (h.retry_after_until is null or h.retry_after_until <= $3)
     order by h.next_due_at
     limit $2
     for no key update skip locked)`,
);

/**
 * Ends up to `slots` host holds on the hosts of `endpointIds`; true when any ended (work may be
 * claimable).
 */
export async function releaseHostHolds(
  db: Queryable,
  endpointIds: readonly string[],
  slots: number,
  now: number,
): Promise<boolean> {
  const { rowCount } = await db.query(RELEASE_HOST_HOLDS, [endpointIds, slots, toDate(now)]);
  return rowCount > 0;
}
