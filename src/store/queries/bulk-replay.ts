import { idsBefore } from '../../ids.ts';
import type { Database, Queryable } from '../db.ts';
import { StoreNotFoundError } from '../errors.ts';
import type { DestinationStatus } from '../repos/destinations.ts';
import { listEndpointMessages } from '../repos/endpoint-messages.ts';
import { lastMessageId } from '../repos/messages.ts';
import { resendDelivery } from './resend.ts';

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

/** Messages listed per page; each is then resent in a transaction of its own. */
const PAGE = 500;

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
    for (const messageId of ids) {
      const outcome = await db.transaction((tx) =>
        resendDelivery(tx, { messageId, endpointId: target.endpointId, now, onlyQueued }),
      );
      if (outcome === 'endpoint_gone')
        throw new StoreNotFoundError(`endpoint ${target.endpointId} not found`);
      if (outcome === 'scheduled' || outcome === 'held') replayed++;
    }
    if (page.done || page.data.length === 0) break;
    after = page.data.at(-1)!.message.id;
  }
  return replayed;
}
