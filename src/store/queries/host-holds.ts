import { prepared, type Queryable } from '../db.ts';

/**
 * Ends the holds a claim put on endpoints whose receiving host was full (courier_claim_batch,
 * 0030), on the hosts of the endpoints given, whose slots were just freed: else those endpoints
 * would wait out the hold with their host's slot unused. A hold something has since lengthened (a
 * rate limit, a Retry-After) stays. Rows another transaction holds are skipped, not waited for (no
 * lock-order deadlock between two workers ending holds): their hold runs out on its own.
 */
const RELEASE_HOST_HOLDS = prepared(
  'courier_release_host_holds',
  `update courier_endpoint_queues q set blocked_until = null, host_held_until = null
   where q.endpoint_id in (
     select h.endpoint_id from courier_endpoint_queues h
     where h.host in (select f.host from courier_endpoint_queues f where f.endpoint_id = any($1::text[]))
       and h.host_held_until is not null and h.blocked_until = h.host_held_until
     for update skip locked)`,
);

/** Ends the host holds on the hosts of `endpointIds`; true when any ended (work may be claimable). */
export async function releaseHostHolds(db: Queryable, endpointIds: readonly string[]): Promise<boolean> {
  const { rowCount } = await db.query(RELEASE_HOST_HOLDS, [endpointIds]);
  return rowCount > 0;
}
