import { idsBefore } from '../../ids.ts';
import { EXAMPLE_TAG } from '../../message-limits.ts';
import type { Database } from '../db.ts';
import { StoreNotFoundError } from '../errors.ts';
import { lastMessageId } from '../repos/messages.ts';
import { toDate } from '../rows.ts';
import { endpointTakes } from './endpoint-filter.ts';
import { shareLockEndpoint } from './endpoint-status.ts';
import { wakeEndpoint } from './notify-workers.ts';
import { payloadGone } from './payload-expiry.ts';

export interface MissingRange {
  endpointId: string;
  /**
   * Messages published in [since, until), by the time their ids carry (ULIDs), as the stats and
   * retention read it: a range of the (app_id, id) index, so each batch reads at most its limit of
   * messages, however many the application keeps outside the range (created_at has no index).
   * The two times differ only for a publish retried with its idempotency key, whose message keeps
   * the id its first try made, and after the publishing process's clock went back (its ids do not).
   */
  since: number;
  until?: number;
}

export interface MissingBatchRange extends MissingRange {
  /** Message ids after this one (the last batch's lastId) and up to `through` (the sweep's end). */
  afterId: string | null;
  through: string;
  limit: number;
}

/** Messages looked at per batch: each batch is one short transaction. */
const BATCH = 1000;

/**
 * Replays every message the endpoint is missing in the range (replayMissingBatch), batch after
 * batch in id order, up to the application's newest message when it began: a sweep that ends,
 * however fast messages are published meanwhile (those get their deliveries from the publish).
 * Returns how many deliveries it made.
 */
export async function replayAllMissing(
  db: Database,
  appId: string,
  range: MissingRange,
  now: number,
): Promise<number> {
  const through = await lastMessageId(db, appId);
  let total = 0;
  let afterId: string | null = null;
  while (through !== null) {
    const batch = await replayMissingBatch(db, { ...range, afterId, through, limit: BATCH }, now);
    total += batch.replayed;
    if (batch.scanned < BATCH || batch.lastId === null) break;
    afterId = batch.lastId;
  }
  return total;
}

interface MissingBatch {
  /** Deliveries made, pending or held. */
  replayed: number;
  /** The messages the batch looked at, and the highest of their ids: the next batch starts after it. */
  scanned: number;
  lastId: string | null;
}

/**
 * One batch of Svix's replay-missing: the application's messages published in the range that the
 * endpoint takes, as its event types and channels now stand (the rule courier_publish_batch
 * applies), and that it never had a delivery of (none waiting, held, in flight or dead, and no
 * attempt logged, which is all a delivered one leaves), and not another endpoint's example
 * (send-example), get one now, as a manual attempt with a fresh budget: pending, or held while
 * the endpoint is paused or disabled. Messages whose payload
 * is gone are passed by. Each message's key is locked as a resend locks it: retention's deletion
 * trigger refuses a message with deliveries but reads committed rows only, so the lock, not the new
 * delivery, keeps the message from a retention pass until this commits. An expunge, a
 * payload-expiry sweep or a retention pass that has the message locked (each takes FOR UPDATE,
 * which a key-share lock waits for, before it writes the message) is waited for, and the message's
 * new version is read again: one expunged or deleted is passed by, one left is replayed (the
 * deliveries, attempts and expiry are read as the statement's snapshot has them; a delivery made
 * since loses to the insert's ON CONFLICT). No cycle: while it locks messages the batch holds only
 * the endpoint's row (shared) and earlier messages' keys; an expunge and a sweep lock no endpoint
 * and one message each, and retention skips locked messages. A publish or resend making the same
 * delivery meanwhile wins.
 */
export async function replayMissingBatch(
  db: Database,
  range: MissingBatchRange,
  now: number,
): Promise<MissingBatch> {
  return db.transaction(async (tx) => {
    if (!(await shareLockEndpoint(tx, range.endpointId)))
      throw new StoreNotFoundError(`endpoint ${range.endpointId} not found`);
    const { rows } = await tx.query<{
      n: number;
      pending: number;
      scanned: number;
      last_scanned: string | null;
    }>(
      `with ep as (
         select e.id, e.app_id, e.event_types, e.channels, q.active
           from courier_endpoints e join courier_endpoint_queues q on q.endpoint_id = e.id
          where e.id = $1
       ), scan as (
         select m.id from courier_messages m
          where m.app_id = (select app_id from ep) and m.id >= $4 and ($5::text is null or m.id < $5)
            and ($2::text is null or m.id > $2) and m.id <= $3
          order by m.id limit $6
       ), target as (
         -- Probed by key one by one, in id order (the subquery locks, so it is not flattened into
         -- a join): a join hashed every message of the table for each batch.
         select t.id, t.created_at from scan cross join lateral (
           select m.id, m.created_at from courier_messages m cross join ep
            where m.id = scan.id and ${endpointTakes('ep', 'm.event_type', 'm.channels')}
              and not coalesce('${EXAMPLE_TAG}' = any(m.tags), false)
              and not ${payloadGone('m', '$7')}
              and not exists (select 1 from courier_deliveries d where d.message_id = m.id and d.endpoint_id = ep.id)
              and not exists (select 1 from courier_attempts a where a.message_id = m.id and a.endpoint_id = ep.id)
            for key share of m) t
       ), ins as (
         insert into courier_deliveries (message_id, endpoint_id, state, next_attempt_at, trigger, created_at, updated_at)
         -- Made no earlier than its message, whatever the clock of the process that published it:
         -- a recovery by publish time passes by, in the index, the dead letters made before its range.
         select target.id, ep.id, case when ep.active then 'pending' else 'held' end, $7, 1,
                greatest($7::timestamptz, target.created_at), $7
           from target cross join ep
          order by target.id
         on conflict (message_id, endpoint_id) do nothing
         returning state
       )
       select (select count(*)::int from ins) as n, (select count(*)::int from ins where state = 'pending') as pending,
              (select count(*)::int from scan) as scanned, (select max(id) from scan) as last_scanned`,
      [
        range.endpointId,
        range.afterId,
        range.through,
        // Before 1970 no id was made.
        idsBefore('msg', Math.max(0, range.since)),
        range.until === undefined ? null : idsBefore('msg', Math.max(0, range.until)),
        range.limit,
        toDate(now),
      ],
    );
    const { n, pending, scanned, last_scanned } = rows[0]!;
    if (pending > 0) await wakeEndpoint(tx, range.endpointId, toDate(now));
    return { replayed: n, scanned, lastId: last_scanned };
  });
}
