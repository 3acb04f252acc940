import { prepared, type Queryable } from '../db.ts';
import { toDate } from '../rows.ts';
import { ASYNC_COMMIT } from './async-commit.ts';

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
  /** When the payload is to be expunged (ms), if sooner than the retention period's end. */
  payloadExpiresAt?: number | null;
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
 * waits for this NOTIFY rather than polling. (A notifying commit holds a database-wide lock until
 * it ends; see publishUnflushed for why a group publish ends before its flush.)
 */
function publishStatement(name: string, from: string): string {
  return prepared(
    name,
    `with published as materialized (
       select p.* from ${from}courier_publish_batch($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, false) p
     ), notified as (
       select pg_notify(courier_channel(), '') from published p where p.deliveries > 0 limit 1
     )
     -- notified is not read: referring to the CTE is what makes it run
     select p.message_id, p.created, p.deliveries, (select count(*) from notified) as notified
     from published p`,
  );
}

const PUBLISH_BATCH = publishStatement('courier_publish_batch', '');
const PUBLISH_BATCH_UNFLUSHED = publishStatement('courier_publish_batch_unflushed', `${ASYNC_COMMIT}, `);

/**
 * A transaction that writes a WAL record of its own (a transactional logical message, which also
 * takes a transaction id) and so commits waiting for its flush: synchronous_commit is on outside
 * the async statements, and WAL is flushed in order, so everything committed before this statement
 * began is on disk when it returns. A transaction id alone is not enough: PostgreSQL waits for the
 * flush only when the committing transaction wrote WAL (RecordTransactionCommit), and assigning a
 * top-level id writes none. Logical decoding consumers see the message under this prefix.
 */
export const FLUSH_BARRIER = prepared(
  'courier_flush_barrier',
  `select pg_logical_emit_message(true, 'courier_flush_barrier', '') is not null as flushed`,
);

function params(inputs: readonly PublishInput[]): unknown[] {
  return [
    inputs.map((i) => i.appId),
    inputs.map((i) => i.eventType),
    Buffer.concat(inputs.map((i) => i.payload)),
    inputs.map((i) => i.payload.length),
    inputs.map((i) => i.eventId ?? null),
    JSON.stringify(inputs.map((i) => i.channels ?? null)),
    JSON.stringify(inputs.map((i) => i.tags ?? null)),
    inputs.map((i) => toDate(i.now)),
    inputs.map((i) => i.messageId),
    // Null for the whole batch in the usual case: no array to encode or unnest.
    inputs.some((i) => i.payloadExpiresAt != null)
      ? inputs.map((i) => (i.payloadExpiresAt == null ? null : toDate(i.payloadExpiresAt)))
      : null,
  ];
}

function results(rows: readonly PublishRow[]): PublishResult[] {
  return rows.map((r) => ({ messageId: r.message_id, created: r.created, deliveries: r.deliveries }));
}

/**
 * Messages + one delivery per matching endpoint, in one statement (courier_publish_batch); workers
 * are woken when the surrounding transaction commits.
 */
export async function publishBatch(q: Queryable, inputs: readonly PublishInput[]): Promise<PublishResult[]> {
  const { rows } = await q.query<PublishRow>(PUBLISH_BATCH, params(inputs));
  return results(rows);
}

/**
 * A batch published in a statement of its own, committed without waiting for its WAL flush; not
 * yet accepted: it is durable once a flushBarrier begun after this returned has returned. Workers
 * are woken at the commit, so they claim while the flush is under way instead of after it, and
 * the database-wide lock a notifying commit holds is not held through a flush, so other
 * publishing processes' commits are not held up by it. If the server crashes before the flush, the
 * batch is undone and its publishes report an error; a delivery sent in that window was sent for a
 * message that no longer exists (docs/architecture.md, "Group publishing").
 */
export async function publishUnflushed(
  db: Queryable,
  inputs: readonly PublishInput[],
): Promise<PublishResult[]> {
  const { rows } = await db.query<PublishRow>(PUBLISH_BATCH_UNFLUSHED, params(inputs));
  return results(rows);
}

/** Returns once everything committed before it began is flushed (FLUSH_BARRIER). */
export async function flushBarrier(db: Queryable): Promise<void> {
  await db.query(FLUSH_BARRIER);
}
