import { idsBefore } from '../../ids.ts';
import type { Database, Queryable } from '../db.ts';
import { StoreNotFoundError } from '../errors.ts';
import type { DestinationStatus } from '../repos/destinations.ts';
import { listEndpointMessages } from '../repos/endpoint-messages.ts';
import { lastMessageId } from '../repos/messages.ts';
import { toDate } from '../rows.ts';
import { shareLockEndpoint } from './endpoint-status.ts';
import { wakeEndpoint } from './notify-workers.ts';
import { freshState, lockLiveMessages, RESEND_CREATE, RESEND_DELIVERIES } from './resend.ts';

export interface BulkReplayFilter {
  /** Messages published in [since, until), by the time their ids carry (as replay-missing reads it). */
  since: number;
  until?: number;
  /** Where the message stands at the endpoint. */
  status?: DestinationStatus;
  /** The class of the status code of its latest attempt there (0: no response). */
  statusCodeClass?: number;
  eventTypes?: string[];
  channel?: string;
  tag?: string;
}

/** Messages listed per page; each page is then resent in a transaction of its own. */
const PAGE = 500;

/**
 * Resends these messages to the endpoint, as resendDelivery resends one, set by set: a few
 * statements for the page, not ten round trips per message. Locks are taken in the order every
 * writer takes them: the endpoint row (shared), the messages' keys (in id order), their deliveries
 * (in id order), then the endpoint's queue row to wake it. The page never waits for a delivery
 * row: one leased (in flight: the attempt under way is the resend), or locked by another writer
 * (a claim, a replay, another resend: it is being sent or made due), is passed by, and the insert
 * tests for a row before it writes (RESEND_CREATE). A completion, which locks its leased rows and
 * then their queue rows, may wait for the page; the page waits for one only at the queue row,
 * which a completion takes after all its deliveries. A page resent message by message, each
 * waking the queue row before it locked the next delivery, leased ones included, deadlocked with
 * completions. Returns how many it scheduled or held; `onlyQueued` makes no
 * delivery for a message with none (delivered since it was chosen).
 */
export async function resendPage(
  tx: Queryable,
  endpointId: string,
  messageIds: readonly string[],
  at: number,
  onlyQueued: boolean,
): Promise<number> {
  if (!(await shareLockEndpoint(tx, endpointId)))
    throw new StoreNotFoundError(`endpoint ${endpointId} not found`);
  const now = toDate(at);
  const live = await lockLiveMessages(tx, messageIds, now);
  const liveIds = [...live.keys()];
  if (liveIds.length === 0) return 0;
  const fresh = await freshState(tx, endpointId);
  // Found by their (message, endpoint) key, then locked by id: a scan of the primary key in id
  // order, which the planner may choose for the ORDER BY, walks every delivery the endpoint has.
  const { rows: queued } = await tx.query<{ id: number; message_id: string }>(
    `select d.id, d.message_id from courier_deliveries d
      where d.id = any(array(select x.id from unnest($2::text[]) as u(id)
                             cross join lateral (select id from courier_deliveries
                                                  where message_id = u.id and endpoint_id = $1 limit 1) x))
        and d.lease_owner is null
      order by d.id for update skip locked`,
    [endpointId, liveIds],
  );
  const states: string[] = [];
  if (queued.length > 0) {
    const { rows } = await tx.query<{ state: string }>(RESEND_DELIVERIES, [
      queued.map((d) => d.id),
      now,
      fresh,
    ]);
    states.push(...rows.map((r) => r.state));
  }
  if (!onlyQueued) {
    // Delivered ones (no row left) get one; one in flight or passed by above has a row, left alone.
    const has = new Set(queued.map((d) => d.message_id));
    const absent = liveIds.filter((id) => !has.has(id));
    if (absent.length > 0) {
      const publishedAt = absent.map((id) => live.get(id)!);
      const { rows } = await tx.query<{ state: string }>(RESEND_CREATE, [
        absent,
        endpointId,
        now,
        fresh,
        publishedAt,
      ]);
      states.push(...rows.map((r) => r.state));
    }
  }
  if (states.includes('pending')) await wakeEndpoint(tx, endpointId, now);
  return states.length;
}

/** Of these messages, the ones whose latest attempt to the endpoint answered in this status code class. */
async function latestAttemptIn(
  db: Queryable,
  endpointId: string,
  messageIds: readonly string[],
  codeClass: number,
): Promise<Set<string>> {
  const { rows } = await db.query<{ message_id: string }>(
    `select l.message_id from unnest($2::text[]) as u(id)
       cross join lateral (select a.message_id, a.status_code from courier_attempts a
                            where a.message_id = u.id and a.endpoint_id = $1
                            order by a.id desc limit 1) l
      where coalesce(l.status_code, 0) / 100 * 100 = $3`,
    [endpointId, messageIds, codeClass],
  );
  return new Set(rows.map((r) => r.message_id));
}

/**
 * Svix's bulk replay: every message sent to the endpoint (it had a delivery there) in the range
 * and filters is resent, as `…/resend` resends one: a manual attempt, due now (held while the
 * endpoint is paused or disabled); one delivered gets a new delivery, one dead a fresh budget, one
 * in flight is left to the attempt under way, one whose payload is gone is passed by. Pages in id
 * order up to the application's newest message when it began. Returns how many it scheduled.
 */
export async function bulkReplay(
  db: Database,
  target: { appId: string; endpointId: string },
  filter: BulkReplayFilter,
  now: number,
): Promise<number> {
  const through = await lastMessageId(db, target.appId);
  let after = idsBefore('msg', Math.max(0, filter.since));
  if (through === null) return 0;
  const until = filter.until === undefined ? undefined : idsBefore('msg', Math.max(0, filter.until));
  // Just past the newest id when it began (ids are ASCII, compared byte by byte): later ones are
  // not walked.
  const before = until !== undefined && until <= through ? until : `${through} `;
  // Chosen as waiting, dead or in flight: one delivered since it was listed is not sent again.
  const onlyQueued = filter.status !== undefined && filter.status !== 'success';
  let replayed = 0;
  while (after < through) {
    const page = await listEndpointMessages(
      db,
      target.appId,
      target.endpointId,
      { status: filter.status, eventTypes: filter.eventTypes, channel: filter.channel, tag: filter.tag },
      { limit: PAGE, after, before, descending: false, withPayload: false },
    );
    let ids = page.data.map((m) => m.message.id);
    if (filter.statusCodeClass !== undefined && ids.length > 0) {
      const matching = await latestAttemptIn(db, target.endpointId, ids, filter.statusCodeClass);
      ids = ids.filter((id) => matching.has(id));
    }
    if (ids.length > 0)
      replayed += await db.transaction((tx) => resendPage(tx, target.endpointId, ids, now, onlyQueued));
    if (page.done || page.data.length === 0) break;
    after = page.data.at(-1)!.message.id;
  }
  return replayed;
}
