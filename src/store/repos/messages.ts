import type { Queryable } from '../db.ts';
import { toBuffer, toDate, toMs } from '../rows.ts';
import type { Page } from './applications.ts';
import type { DestinationStatus } from './destinations.ts';
import { standsAtSomeEndpointSql } from './message-status-counts.ts';

export interface Message {
  id: string;
  appId: string;
  eventType: string;
  eventId: string | null;
  /** The exact bytes every attempt sends; null when the caller asked to leave them out. */
  payload: Buffer | null;
  channels: string[] | null;
  tags: string[] | null;
  createdAt: number;
  /** When its payload was expunged (the bytes are gone): null while it has them. */
  expungedAt: number | null;
  /** When its payload's own retention (payloadRetentionHours or …Period) ends: null if it asked for none. */
  payloadExpiresAt: number | null;
}

/** How a message's payload stands: what payloadGoneAt decides from. */
export type PayloadState = Pick<Message, 'expungedAt' | 'payloadExpiresAt'>;

export interface MessageRow {
  id: string;
  app_id: string;
  event_type: string;
  event_id: string | null;
  payload: Uint8Array | null;
  channels: string[] | null;
  tags: string[] | null;
  created_at: Date;
  expunged_at: Date | null;
  payload_expires_at: Date | null;
}

export const fromMessageRow = (r: MessageRow): Message => ({
  id: r.id,
  appId: r.app_id,
  eventType: r.event_type,
  eventId: r.event_id,
  payload: r.payload ? toBuffer(r.payload) : null,
  channels: r.channels,
  tags: r.tags,
  createdAt: toMs(r.created_at)!,
  expungedAt: toMs(r.expunged_at),
  payloadExpiresAt: toMs(r.payload_expires_at),
});

/**
 * When the message's payload went, as the API tells it: expunged, or past the retention it asked
 * for at `now` though no sweep has emptied it yet (what the sweep then records, the same instant).
 * Null while it is kept.
 */
export function payloadGoneAt(m: PayloadState, now: number): number | null {
  if (m.expungedAt !== null) return m.expungedAt;
  return m.payloadExpiresAt !== null && m.payloadExpiresAt <= now ? m.payloadExpiresAt : null;
}

/** The columns of courier_messages `table` (its name or alias) a Message is read from. */
export const messageColumns = (withPayload: boolean, table = 'courier_messages') =>
  `${table}.id, ${table}.app_id, ${table}.event_type, ${table}.event_id,
   ${withPayload ? `${table}.payload` : 'null::bytea as payload'}, ${table}.channels, ${table}.tags,
   ${table}.created_at, ${table}.expunged_at,
   (select pe.expires_at from courier_payload_expiries pe where pe.message_id = ${table}.id) as payload_expires_at`;

/** By id, or else by the application's event id (an id match wins if both exist). */
export async function findMessage(
  db: Queryable,
  appId: string,
  idOrEventId: string,
  withPayload = true,
): Promise<Message | null> {
  const { rows } = await db.query<MessageRow>(
    `select ${messageColumns(withPayload)} from courier_messages
      where app_id = $1 and (id = $2 or event_id = $2) order by id = $2 desc limit 1`,
    [appId, idOrEventId],
  );
  return rows[0] ? fromMessageRow(rows[0]) : null;
}

/** The application's messages of these ids (those still kept), in no particular order. */
export async function findMessages(
  db: Queryable,
  appId: string,
  ids: readonly string[],
  withPayload = true,
): Promise<Message[]> {
  const { rows } = await db.query<MessageRow>(
    `select ${messageColumns(withPayload)} from courier_messages where app_id = $1 and id = any($2)`,
    [appId, ids],
  );
  return rows.map(fromMessageRow);
}

export interface MessageFilter {
  createdBefore?: number;
  createdAfter?: number;
  channel?: string;
  tag?: string;
  eventTypes?: readonly string[];
}

export interface MessagePageOptions {
  limit: number;
  after?: string;
  before?: string;
  descending?: boolean;
  withPayload: boolean;
}

/**
 * Which of an application's messages a list takes ($1 … $8, on courier_messages' own columns):
 * its page bounds and filters. The message and endpoint message lists share them.
 */
export const MESSAGE_CONDITIONS = `app_id = $1 and ($2::text is null or id > $2) and ($3::text is null or id < $3)
        and ($4::timestamptz is null or created_at < $4) and ($5::timestamptz is null or created_at > $5)
        and ($6::text is null or $6 = any(channels)) and ($7::text is null or $7 = any(tags))
        and ($8::text[] is null or event_type = any($8))`;

export function messageConditionParams(appId: string, filter: MessageFilter, opts: MessagePageOptions) {
  return [
    appId,
    opts.after ?? null,
    opts.before ?? null,
    filter.createdBefore === undefined ? null : toDate(filter.createdBefore),
    filter.createdAfter === undefined ? null : toDate(filter.createdAfter),
    filter.channel ?? null,
    filter.tag ?? null,
    filter.eventTypes?.length ? filter.eventTypes : null,
  ];
}

/**
 * A page of the application's messages; with `standing`, those that stand so at one of its
 * endpoints at least, found by walking its messages (a standing that few have costs a longer walk).
 */
export async function listMessages(
  db: Queryable,
  appId: string,
  filter: MessageFilter & { standing?: DestinationStatus },
  opts: MessagePageOptions,
): Promise<Page<Message>> {
  // Only then does the statement name the queue's tables (an unfiltered list waits on none of their locks).
  const standing = filter.standing ? `and ${standsAtSomeEndpointSql('courier_messages', '$10')}` : '';
  const { rows } = await db.query<MessageRow>(
    `select ${messageColumns(opts.withPayload)} from courier_messages
      where ${MESSAGE_CONDITIONS} ${standing}
      order by id ${opts.descending ? 'desc' : 'asc'} limit $9`,
    [
      ...messageConditionParams(appId, filter, opts),
      opts.limit + 1,
      ...(filter.standing ? [filter.standing] : []),
    ],
  );
  return { data: rows.slice(0, opts.limit).map(fromMessageRow), done: rows.length <= opts.limit };
}

/** The application's highest message id: what a sweep over its messages stops at. */
export async function lastMessageId(db: Queryable, appId: string): Promise<string | null> {
  const { rows } = await db.query<{ id: string | null }>(
    'select max(id) as id from courier_messages where app_id = $1',
    [appId],
  );
  return rows[0]?.id ?? null;
}

/** An application's messages whose payload is still kept, in id order in (afterId, through]. */
export async function messageIdsWithPayload(
  db: Queryable,
  appId: string,
  range: { afterId: string | null; through: string },
  limit: number,
): Promise<string[]> {
  const { rows } = await db.query<{ id: string }>(
    `select id from courier_messages
      where app_id = $1 and expunged_at is null and ($2::text is null or id > $2) and id <= $3
      order by id limit $4`,
    [appId, range.afterId, range.through, limit],
  );
  return rows.map((r) => r.id);
}
