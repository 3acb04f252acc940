import type { Queryable } from '../db.ts';
import { type DestinationStatus, deliveryStatusSql } from './destinations.ts';

/** How many of a message's endpoints it stands at in each of Svix's four states. */
export type StatusCounts = Record<DestinationStatus, number>;

/**
 * For a page of messages at once, as listDestinations reads one: a delivery's row while it is
 * queued, being sent or dead-lettered; a delivered one's delivered attempt once it has left the
 * queue table (unless a resend has put it back). Both halves read the messages' own index entries,
 * and the delivered half is checked against the queued rows read, materialised: against the whole
 * queue table the planner may choose an anti-join that reads all of it. Deleted endpoints, and those
 * of another application, are not counted.
 */
const STATUS_COUNTS = `with queued as materialized (
    select d.message_id, d.endpoint_id, ${deliveryStatusSql('d')} as status
      from courier_deliveries d
     where d.message_id = any($2::text[])
  ), s as (
    select q.message_id, q.endpoint_id, q.status from queued q
    union all
    select distinct a.message_id, a.endpoint_id, 'success'
      from courier_attempts a
     where a.message_id = any($2::text[]) and a.decision = 'delivered'
       and not exists (select 1 from queued q where q.message_id = a.message_id and q.endpoint_id = a.endpoint_id)
  )
  select s.message_id,
         count(*) filter (where s.status = 'success')::int as success,
         count(*) filter (where s.status = 'pending')::int as pending,
         count(*) filter (where s.status = 'sending')::int as sending,
         count(*) filter (where s.status = 'fail')::int as fail
    from s
    join courier_endpoints e on e.id = s.endpoint_id
   where e.app_id = $1 and e.deleted_at is null
   group by s.message_id`;

/**
 * Whether the message (`m`, courier_messages' name in the query) stands at `status` (SQL, a
 * parameter) at one of its application's endpoints at least, as STATUS_COUNTS counts: for a list
 * filtered so. One EXISTS over a UNION ALL, so that it is probed message by message through their
 * index entries, stopping at the first row: as two EXISTS joined by OR, PostgreSQL may hash every
 * delivery of that standing for each page instead.
 */
export const standsAtSomeEndpointSql = (m: string, status: string) => `exists (
    select 1 from courier_deliveries d join courier_endpoints e on e.id = d.endpoint_id
     where d.message_id = ${m}.id and e.app_id = ${m}.app_id and e.deleted_at is null
       and ${deliveryStatusSql('d')} = ${status}::text
    union all
    select 1 from courier_attempts a join courier_endpoints e on e.id = a.endpoint_id
     where ${status}::text = 'success' and a.message_id = ${m}.id and a.decision = 'delivered'
       and e.app_id = ${m}.app_id and e.deleted_at is null
       and not exists (select 1 from courier_deliveries d where d.message_id = a.message_id and d.endpoint_id = a.endpoint_id))`;

/** Counts for each of `messageIds` (an application's); a message sent to no endpoint counts zeros. */
export async function messageStatusCounts(
  db: Queryable,
  appId: string,
  messageIds: string[],
): Promise<Map<string, StatusCounts>> {
  const counts = new Map<string, StatusCounts>(
    messageIds.map((id) => [id, { success: 0, pending: 0, sending: 0, fail: 0 }]),
  );
  if (messageIds.length === 0) return counts;
  const { rows } = await db.query<StatusCounts & { message_id: string }>(STATUS_COUNTS, [appId, messageIds]);
  for (const { message_id, ...row } of rows) counts.set(message_id, row);
  return counts;
}
