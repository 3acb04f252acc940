import type { Database, Queryable } from '../db.ts';
import { StoreNotFoundError } from '../errors.ts';
import { toDate, toMs } from '../rows.ts';
import { shareLockEndpoint } from './endpoint-status.ts';
import { wakeEndpoint } from './notify-workers.ts';
import { payloadGone } from './payload-expiry.ts';
import { freshState, lockLiveMessages, RESEND_DELIVERIES } from './resend.ts';

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

/**
 * Dead letters are paged in id order, on their index by (endpoint_id, id, updated_at, created_at)
 * (migrations 0033, 0034). The planner multiplies the selectivity of the endpoint by that of the
 * dead states: for an endpoint whose deliveries are all dead among others' waiting ones, it
 * expects a few rows where there are thousands, and reads every one of them past the page to sort
 * them (a bitmap scan), which made going through N dead letters cost O(N²). Sorting priced out
 * for the transaction, the page is read in index order and the scan stops at its limit. The
 * replay's statements after it keep their plans: the still-dead recheck's id order comes from the
 * primary key.
 */
const IN_ID_ORDER = 'set local enable_sort = off';

/** The endpoint's ($1) dead letters that died in [$2, $3), as deliveries aliased d. */
const DEAD_WITHIN = `d.endpoint_id = $1 and d.state in ('failed', 'expired')
   and ($2::timestamptz is null or d.updated_at >= $2) and ($3::timestamptz is null or d.updated_at < $3)`;

/**
 * A window of when they died read on the index by that time, then sorted by id: a window of a few
 * pages (see WINDOW_SORTED_PAGES). In id order, the index carries the time, so a window's page
 * skips the dead letters outside it without reading their rows, but still walks their index
 * entries: every one before a window of the newest is a few milliseconds per hundred thousand.
 * The ORDER BY keeps the subquery whole, and under IN_ID_ORDER only that index gives its order.
 */
const WINDOW_SORTED = `(select * from courier_deliveries d where ${DEAD_WITHIN} order by d.updated_at) d`;

/**
 * How many of the endpoint's dead letters died in [$2, $3), counted up to $4: whether its pages are
 * read sorted (a narrow window) or in id order. Under IN_ID_ORDER, on the index by that time.
 */
export const DEAD_LETTERS_IN_WINDOW = `select count(*)::int as n from (select 1 from courier_deliveries d
 where ${DEAD_WITHIN} order by d.updated_at limit $4) w`;

/**
 * A window of up to this many pages of dead letters is read sorted, each page reading the whole
 * window; a wider one in id order, each page after the last, so that going through it costs its
 * rows once, not once a page.
 */
export const WINDOW_SORTED_PAGES = 2;

/** [since, until) as the page statements' parameters. */
const diedWithin = (filter: DeadLetterFilter): [Date | null, Date | null] => [
  filter.since === undefined ? null : toDate(filter.since),
  filter.until === undefined ? null : toDate(filter.until),
];

/**
 * Sets IN_ID_ORDER for the transaction and tells which deliveries a page of `limit` dead letters
 * is to read: the table in id order, or a narrow window of when they died, sorted.
 */
async function pageSource(
  tx: Queryable,
  filter: DeadLetterFilter,
  limit: number,
): Promise<'table' | 'window'> {
  await tx.query(IN_ID_ORDER);
  if (filter.since === undefined && filter.until === undefined) return 'table';
  const sorted = limit * WINDOW_SORTED_PAGES;
  const { rows } = await tx.query<{ n: number }>(DEAD_LETTERS_IN_WINDOW, [
    filter.endpointId,
    ...diedWithin(filter),
    sorted,
  ]);
  return rows[0]!.n < sorted ? 'window' : 'table';
}

/**
 * A page of an endpoint's dead letters ($1) in [$2, $3) by when they died, after id $4, the first
 * $5 in id order; $6 the instant that tells an expired payload. Each dead letter's message is
 * probed by key (the LIMIT keeps the subquery from being flattened into a join, which may hash the
 * whole messages table): a page reads about its own rows.
 */
const deadLetterPage = (
  deliveries: string,
) => `select d.id, d.message_id, d.endpoint_id, d.state, d.attempts, d.last_error, d.updated_at,
       m.payload_expunged
  from ${deliveries}
 cross join lateral (select ${payloadGone('m', '$6')} as payload_expunged from courier_messages m
                      where m.id = d.message_id limit 1) m
 where ${DEAD_WITHIN}
   and ($4::bigint is null or d.id > $4)
 order by d.id limit $5`;

export const DEAD_LETTER_PAGE = deadLetterPage('courier_deliveries d');
export const DEAD_LETTER_PAGE_OF_WINDOW = deadLetterPage(WINDOW_SORTED);

/**
 * The dead letters a replay batch takes from `deliveries` (aliased d), as a listed page finds
 * them ($1 to $3, after id $6, the first $5), only those of ids $4 if given, whose payload is not
 * expunged, and whose message was published in [$7, $8) (Svix's recover reads its range so).
 * A delivery is made no earlier than its message (a publish stamps both alike, RESEND_CREATE and
 * replay-missing the later of their clock and the message's time): one made before the range
 * cannot be in it, and one made over an hour before it is passed by in the index, its message
 * unread. The hour is for deliveries an earlier release's resend or replay-missing stamped by a
 * clock behind the publisher's. Bound in the index only in a plan made with the parameters
 * (unnamed statements, as here).
 */
const deadLettersToReplay = (deliveries: string) => `select d.id, d.message_id from ${deliveries}
 cross join lateral (select m.expunged_at, m.created_at from courier_messages m
                      where m.id = d.message_id limit 1) m
 where ${DEAD_WITHIN}
   and ($4::bigint[] is null or d.id = any($4)) and ($6::bigint is null or d.id > $6)
   and ($7::timestamptz is null or d.created_at >= $7::timestamptz - interval '1 hour')
   and m.expunged_at is null
   and ($7::timestamptz is null or m.created_at >= $7) and ($8::timestamptz is null or m.created_at < $8)
 order by d.id limit $5`;

export const DEAD_LETTERS_TO_REPLAY = deadLettersToReplay('courier_deliveries d');
export const DEAD_LETTERS_TO_REPLAY_OF_WINDOW = deadLettersToReplay(WINDOW_SORTED);

/**
 * The dead letters of ids $4 (`courier dlq replay` sends the listed ones, 100 at a time), each
 * found by its id: on statistics taken before the endpoint's deliveries died, the planner expected
 * none there and read every dead letter of the endpoint to find the few chosen.
 */
export const CHOSEN_DEAD_LETTERS_TO_REPLAY = deadLettersToReplay(
  `unnest($4::bigint[]) as u(id)
 cross join lateral (select * from courier_deliveries d where d.id = u.id limit 1) d`,
);

/** Failed and expired deliveries of an endpoint, oldest first, kept until replayed; `now` tells an expired payload. */
export async function listDeadLetters(
  db: Database,
  filter: DeadLetterFilter & { limit: number; afterId?: number; now: number },
): Promise<DeadLetter[]> {
  const { rows } = await db.transaction(async (tx) => {
    const source = await pageSource(tx, filter, filter.limit);
    return tx.query<DeadRow>(source === 'table' ? DEAD_LETTER_PAGE : DEAD_LETTER_PAGE_OF_WINDOW, [
      filter.endpointId,
      ...diedWithin(filter),
      filter.afterId ?? null,
      filter.limit,
      toDate(filter.now),
    ]);
  });
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
   * Dead letters the batch looked at: fewer replayed when some were gone meanwhile (their payload
   * expunged or expired, their message deleted by retention) or are being made due by another
   * writer (a replay, a resend).
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
 * Locks as a resend does, in every writer's order: the endpoint row (shared), the messages' keys
 * in id order, waiting (an expunge, a payload-expiry sweep or a retention pass under way is waited
 * for and its outcome read: a dead letter it left alone is replayed, not passed by), the dead
 * letters in id order, skipping those another writer holds (a replay or resend making them due),
 * then the queue row to wake it. The messages before the deliveries: an expunge locks its message,
 * then waits for its deliveries, so the other order could deadlock with one.
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
    const at = toDate(now);
    const chosen = filter.deliveryIds === undefined ? null : [...new Set(filter.deliveryIds)];
    const limit = filter.limit ?? REPLAY_BATCH;
    const source = chosen === null ? await pageSource(tx, filter, limit) : 'chosen';
    const statement = {
      table: DEAD_LETTERS_TO_REPLAY,
      window: DEAD_LETTERS_TO_REPLAY_OF_WINDOW,
      chosen: CHOSEN_DEAD_LETTERS_TO_REPLAY,
    }[source];
    const { rows: found } = await tx.query<{ id: string; message_id: string }>(statement, [
      filter.endpointId,
      ...diedWithin(filter),
      chosen,
      limit,
      filter.afterId ?? null,
      filter.sentSince === undefined ? null : toDate(filter.sentSince),
      filter.sentUntil === undefined ? null : toDate(filter.sentUntil),
    ]);
    if (found.length === 0) return { replayed: 0, scanned: 0, lastId: null };
    const lastId = Number(found.at(-1)!.id);
    const live = await lockLiveMessages(
      tx,
      found.map((d) => d.message_id),
      at,
    );
    // Still dead once locked: one replayed meanwhile by another writer, and since claimed or
    // delivered, is not touched (the lock reads its newest version). Failed or expired, written
    // not as the dead letters' partial index predicate: on stale statistics the planner read that
    // whole index for each batch.
    const { rows: dead } = await tx.query<{ id: number }>(
      `select id from courier_deliveries where id = any($1::bigint[]) and state not in ('pending', 'in_flight', 'held', 'delivered')
        order by id for update skip locked`,
      [found.filter((d) => live.has(d.message_id)).map((d) => d.id)],
    );
    if (dead.length === 0) return { replayed: 0, scanned: found.length, lastId };
    const fresh = await freshState(tx, filter.endpointId);
    const { rows } = await tx.query<{ state: string }>(RESEND_DELIVERIES, [dead.map((d) => d.id), at, fresh]);
    if (fresh === 'pending') await wakeEndpoint(tx, filter.endpointId, at);
    return { replayed: rows.length, scanned: found.length, lastId };
  });
}

/** Dead letters looked at per replay batch, and the most one replay by id takes. */
export const REPLAY_BATCH = 1000;

/**
 * Replays every dead letter of the endpoint in the range, batch after batch until none is left;
 * each batch is one transaction. Each starts after the last one's highest id: one replayed
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
