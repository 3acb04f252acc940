import type { Database, Queryable } from '../db.ts';
import { StoreNotFoundError } from '../errors.ts';
import { toDate, toMs } from '../rows.ts';
import { shareLockEndpoint } from './endpoint-status.ts';
import { wakeEndpoint } from './notify-workers.ts';
import { payloadGone } from './payload-expiry.ts';

export interface DeadLetter {
  deliveryId: number;
  messageId: string;
  endpointId: string;
  state: 'failed' | 'expired';
  attempts: number;
  lastError: string | null;
  updatedAt: number;
  /** Its message's payload was deleted (expunged, or past its own retention): it cannot be replayed. */
  payloadExpunged: boolean;
}

interface DeadRow {
  id: number;
  message_id: string;
  endpoint_id: string;
  state: 'failed' | 'expired';
  attempts: number;
  last_error: string | null;
  updated_at: Date;
  payload_expunged: boolean;
}

export interface DeadLetterFilter {
  endpointId: string;
  /** When it failed (its last change): [since, until). */
  since?: number;
  until?: number;
  /** When its message was published: [sentSince, sentUntil), as Svix's recover reads its range. */
  sentSince?: number;
  sentUntil?: number;
}

/** Failed and expired deliveries of an endpoint, oldest first, kept until replayed; `now` tells an expired payload. */
export async function listDeadLetters(
  db: Queryable,
  filter: DeadLetterFilter & { limit: number; afterId?: number; now: number },
): Promise<DeadLetter[]> {
  const { rows } = await db.query<DeadRow>(
    `select d.id, d.message_id, d.endpoint_id, d.state, d.attempts, d.last_error, d.updated_at,
            ${payloadGone('m', '$6')} as payload_expunged
       from courier_deliveries d join courier_messages m on m.id = d.message_id
      where d.endpoint_id = $1 and d.state in ('failed', 'expired')
        and ($2::timestamptz is null or d.updated_at >= $2) and ($3::timestamptz is null or d.updated_at < $3)
        and ($4::bigint is null or d.id > $4)
      order by d.id limit $5`,
    [
      filter.endpointId,
      filter.since === undefined ? null : toDate(filter.since),
      filter.until === undefined ? null : toDate(filter.until),
      filter.afterId ?? null,
      filter.limit,
      toDate(filter.now),
    ],
  );
  return rows.map((r) => ({
    deliveryId: r.id,
    messageId: r.message_id,
    endpointId: r.endpoint_id,
    state: r.state,
    attempts: r.attempts,
    lastError: r.last_error,
    updatedAt: toMs(r.updated_at)!,
    payloadExpunged: r.payload_expunged,
  }));
}

export interface ReplayResult {
  replayed: number;
  /**
   * Dead letters the batch looked at: fewer replayed when some were busy (their message being
   * expunged or deleted by retention) or their payload expired.
   */
  scanned: number;
  /** The highest delivery id looked at: the next batch starts after it (afterId). */
  lastId: number | null;
}

/**
 * Replays dead deliveries with a fresh attempt budget: the same message id and bytes, due now,
 * triggered manually. Held instead of pending when the endpoint is not enabled.
 * With deliveryIds, replays exactly those; otherwise the endpoint's within [since, until), up to
 * limit of them with ids above afterId.
 */
export async function replayDeadLetters(
  db: Database,
  filter: DeadLetterFilter & { deliveryIds?: readonly number[]; limit?: number; afterId?: number },
  now: number,
): Promise<ReplayResult> {
  return db.transaction(async (tx) => {
    // Deleted meanwhile: its dead letters are gone, or finishing an attempt started before.
    if (!(await shareLockEndpoint(tx, filter.endpointId)))
      throw new StoreNotFoundError(`endpoint ${filter.endpointId} not found`);
    const { rows } = await tx.query<{
      n: number;
      pending: number;
      scanned: number;
      last_scanned: number | null;
    }>(
      `with target as (
         select d.id, d.message_id from courier_deliveries d
          where d.endpoint_id = $1 and d.state in ('failed', 'expired')
            and ($2::timestamptz is null or d.updated_at >= $2) and ($3::timestamptz is null or d.updated_at < $3)
            and ($4::bigint[] is null or d.id = any($4)) and ($7::bigint is null or d.id > $7)
            and not exists (select 1 from courier_messages m where m.id = d.message_id and m.expunged_at is not null)
            and ($8::timestamptz is null and $9::timestamptz is null
                 or exists (select 1 from courier_messages m where m.id = d.message_id
                             and ($8::timestamptz is null or m.created_at >= $8)
                             and ($9::timestamptz is null or m.created_at < $9)))
          order by d.id limit $6
          for update skip locked
       ), locked as (
         -- The message's row, locked too: an expunge that committed after this statement's
         -- snapshot was taken made a newer version of it, which the lock rechecks (EvalPlanQual);
         -- the condition above, read in the snapshot, misses it. One being made now is passed by.
         -- A payload past its expiry is as good as expunged: its sweep may not have emptied it yet
         -- (held back by an attempt under way, or not yet run).
         select target.id from target join courier_messages m on m.id = target.message_id
          where not ${payloadGone('m', '$5')}
          for share of m skip locked
       ), upd as (
         update courier_deliveries d
            set state = case when q.active then 'pending' else 'held' end, attempts = 0, give_up_at = null,
                next_attempt_at = $5, trigger = 1, last_error = null, updated_at = $5
           from locked, courier_endpoint_queues q
          where d.id = locked.id and q.endpoint_id = d.endpoint_id
          returning d.id, d.state
       )
       select (select count(*)::int from upd) as n, (select count(*)::int from upd where state = 'pending') as pending,
              (select count(*)::int from target) as scanned, (select max(id) from target) as last_scanned`,
      [
        filter.endpointId,
        filter.since === undefined ? null : toDate(filter.since),
        filter.until === undefined ? null : toDate(filter.until),
        filter.deliveryIds ?? null,
        toDate(now),
        filter.limit ?? 1000,
        filter.afterId ?? null,
        filter.sentSince === undefined ? null : toDate(filter.sentSince),
        filter.sentUntil === undefined ? null : toDate(filter.sentUntil),
      ],
    );
    const { n, pending, scanned, last_scanned } = rows[0]!;
    if (pending > 0) await wakeEndpoint(tx, filter.endpointId, toDate(now));
    return { replayed: n, scanned, lastId: last_scanned === null ? null : Number(last_scanned) };
  });
}

/** Dead letters looked at per replay batch, and the most one replay by id takes. */
export const REPLAY_BATCH = 1000;

/**
 * Replays every dead letter of the endpoint in the range, batch after batch until none is left;
 * each batch is one atomic statement. Each starts after the last one's highest id: one replayed
 * and dead again meanwhile is not replayed twice. Returns how many were replayed.
 */
export async function replayAllDeadLetters(
  db: Database,
  filter: DeadLetterFilter,
  now: number,
): Promise<number> {
  let total = 0;
  let afterId: number | undefined;
  for (;;) {
    const batch = await replayDeadLetters(db, { ...filter, limit: REPLAY_BATCH, afterId }, now);
    total += batch.replayed;
    // Paged by what was looked at, not by what was replayed: a busy row must not end the run.
    if (batch.scanned < REPLAY_BATCH || batch.lastId === null) return total;
    afterId = batch.lastId;
  }
}
