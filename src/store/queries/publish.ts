import { prepared, type Queryable } from '../db.ts';
import { toDate } from '../rows.ts';

export interface PublishInput {
  appId: string;
  messageId: string;
  eventType: string;
  /** The exact bytes every attempt will send. */
  payload: Buffer;
  eventId?: string | null;
  channels?: readonly string[] | null;
  tags?: readonly string[] | null;
  now: number;
}

export interface PublishResult {
  messageId: string;
  /** false when the application already had a message with this event id. */
  created: boolean;
  deliveries: number;
}

interface PublishRow {
  message_id: string;
  created: boolean;
  deliveries: number;
}

/**
 * The NOTIFY rides in the publishing transaction: workers hear of the deliveries when, and only
 * if, they commit. Every batch that made deliveries notifies, not only one that made an endpoint
 * due: a claim may have passed over an endpoint this batch held locked, and the worker that did
 * waits for this NOTIFY rather than polling. (A notifying commit holds a database-wide lock while
 * its record is flushed; group publishing keeps such commits few.)
 */
const PUBLISH_BATCH = prepared(
  'courier_publish_batch',
  `with published as materialized (
     select * from courier_publish_batch($1, $2, $3, $4, $5, $6, $7, $8, $9, false)
   ), notified as (
     select pg_notify(courier_channel(), '') from published p where p.deliveries > 0 limit 1
   )
   -- notified is not read: referring to the CTE is what makes it run
   select p.message_id, p.created, p.deliveries, (select count(*) from notified) as notified
   from published p`,
);

/**
 * Messages + one delivery per matching endpoint, in one statement (courier_publish_batch); workers
 * are woken when the surrounding transaction commits.
 */
export async function publishBatch(q: Queryable, inputs: readonly PublishInput[]): Promise<PublishResult[]> {
  const { rows } = await q.query<PublishRow>(PUBLISH_BATCH, [
    inputs.map((i) => i.appId),
    inputs.map((i) => i.eventType),
    Buffer.concat(inputs.map((i) => i.payload)),
    inputs.map((i) => i.payload.length),
    inputs.map((i) => i.eventId ?? null),
    JSON.stringify(inputs.map((i) => i.channels ?? null)),
    JSON.stringify(inputs.map((i) => i.tags ?? null)),
    inputs.map((i) => toDate(i.now)),
    inputs.map((i) => i.messageId),
  ]);
  return rows.map((r) => ({ messageId: r.message_id, created: r.created, deliveries: r.deliveries }));
}
