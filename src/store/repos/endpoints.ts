import { receiverHost } from '../../delivery/receiver-host.ts';
import type { Queryable } from '../db.ts';
import { StoreNotFoundError } from '../errors.ts';
import { notifyWorkers } from '../queries/notify-workers.ts';
import { toDate, toMs } from '../rows.ts';
import { openSecret, sealSecret } from '../secrets-at-rest.ts';
import type { Page } from './applications.ts';

export type EndpointStatus = 'enabled' | 'disabled' | 'paused';

export interface Endpoint {
  id: string;
  appId: string;
  uid: string | null;
  url: string;
  /** It reaches public addresses only (its URL set with an application's token, or so set by the admin token). */
  publicOnly: boolean;
  description: string;
  status: EndpointStatus;
  statusReason: string | null;
  /** Paused or disabled by the operator (the admin token): only the admin token enables it again. */
  heldByOperator: boolean;
  eventTypes: string[] | null;
  channels: string[] | null;
  rateLimit: number;
  maxInFlight: number;
  /** What the operator set of these for the URL it has: an application's token sets them up to it. */
  operatorLimits: OperatorLimits;
  retryPolicy: unknown;
  headers: Record<string, string>;
  metadata: Record<string, string>;
  version: number;
  failureStreak: number;
  /** The end of the last wait its receiver asked for (Retry-After on a 429 or 503); nothing is sent before it. */
  retryAfterUntil: number | null;
  /** The first failure of its current run of failed attempts (no success since, no gap of a day); null when none. */
  failingSince: number | null;
  createdAt: number;
  updatedAt: number;
}

/** The delivery settings as the operator (the admin token) set them for the URL; null: not set. */
export interface OperatorLimits {
  maxInFlight: number | null;
  rateLimit: number | null;
}

/** What a caller may set on an endpoint; status changes go through endpoint-status.ts. */
export interface EndpointFields {
  url: string;
  /** Absent: false on creation, kept on update. */
  publicOnly?: boolean;
  uid?: string | null;
  description?: string;
  eventTypes?: string[] | null;
  channels?: string[] | null;
  rateLimit: number;
  maxInFlight: number;
  /** Absent: none on creation, kept on update. */
  operatorLimits?: OperatorLimits;
  retryPolicy?: unknown;
  headers?: Record<string, string>;
  metadata?: Record<string, string>;
  version?: number;
}

export interface EndpointRow {
  id: string;
  app_id: string;
  uid: string | null;
  url: string;
  public_only: boolean;
  held_by_operator: boolean;
  description: string;
  status: EndpointStatus;
  status_reason: string | null;
  event_types: string[] | null;
  channels: string[] | null;
  rate_limit: number;
  max_in_flight: number;
  operator_max_in_flight: number | null;
  operator_rate_limit: number | null;
  operator_limits_url: string | null;
  retry_policy: unknown;
  headers: Record<string, string>;
  metadata: Record<string, string>;
  version: number;
  failure_streak: number;
  retry_after_until: Date | null;
  failing_since: Date | null;
  created_at: Date;
  updated_at: Date;
}

/** The queue row's columns an Endpoint shows (fromRow). */
export const QUEUE_COLUMNS = 'q.failure_streak, q.retry_after_until, q.failing_since';

const SELECT = `select e.*, ${QUEUE_COLUMNS} from courier_endpoints e
  join courier_endpoint_queues q on q.endpoint_id = e.id`;

export const fromRow = (r: EndpointRow): Endpoint => ({
  id: r.id,
  appId: r.app_id,
  uid: r.uid,
  url: r.url,
  publicOnly: r.public_only,
  description: r.description,
  status: r.status,
  statusReason: r.status_reason,
  heldByOperator: r.status !== 'enabled' && r.held_by_operator,
  eventTypes: r.event_types,
  channels: r.channels,
  rateLimit: r.rate_limit,
  maxInFlight: r.max_in_flight,
  operatorLimits:
    r.operator_limits_url === r.url
      ? { maxInFlight: r.operator_max_in_flight, rateLimit: r.operator_rate_limit }
      : { maxInFlight: null, rateLimit: null },
  retryPolicy: r.retry_policy,
  headers: r.headers,
  metadata: r.metadata,
  version: r.version,
  failureStreak: r.failure_streak,
  retryAfterUntil: toMs(r.retry_after_until),
  failingSince: toMs(r.failing_since),
  createdAt: toMs(r.created_at)!,
  updatedAt: toMs(r.updated_at)!,
});

const jsonOrNull = (v: unknown) => (v === undefined || v === null ? null : JSON.stringify(v));

/** Creates the endpoint, its first signing secret and its queue row. Call inside a transaction. */
export async function createEndpoint(
  db: Queryable,
  input: {
    id: string;
    appId: string;
    fields: EndpointFields;
    secret: string;
    /** Made disabled, and by whom: the operator's is theirs to enable (heldByOperator). */
    disabledBy?: 'owner' | 'operator';
    now: number;
  },
): Promise<Endpoint> {
  const { id, appId, fields, now } = input;
  const status: EndpointStatus = input.disabledBy ? 'disabled' : 'enabled';
  // A deletion of the application in progress finishes first; then there is nothing to add to.
  const { rows: live } = await db.query(
    'select 1 from courier_applications where id = $1 and deleted_at is null for share',
    [appId],
  );
  if (live.length === 0) throw new StoreNotFoundError(`application ${appId} not found`);
  await db.query(
    `insert into courier_endpoints (id, app_id, uid, url, description, status, event_types, channels, rate_limit,
       max_in_flight, retry_policy, headers, metadata, version, created_at, updated_at, public_only, held_by_operator,
       operator_max_in_flight, operator_rate_limit, operator_limits_url)
     values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $15, $16, $17, $18, $19, $4)`,
    [
      id,
      appId,
      fields.uid ?? null,
      fields.url,
      fields.description ?? '',
      status,
      fields.eventTypes ?? null,
      fields.channels ?? null,
      fields.rateLimit,
      fields.maxInFlight,
      jsonOrNull(fields.retryPolicy),
      JSON.stringify(fields.headers ?? {}),
      JSON.stringify(fields.metadata ?? {}),
      fields.version ?? 1,
      toDate(now),
      fields.publicOnly ?? false,
      input.disabledBy === 'operator',
      fields.operatorLimits?.maxInFlight ?? null,
      fields.operatorLimits?.rateLimit ?? null,
    ],
  );
  await db.query('insert into courier_endpoint_secrets (endpoint_id, key, created_at) values ($1, $2, $3)', [
    id,
    sealSecret(db, input.secret),
    toDate(now),
  ]);
  await db.query(
    `insert into courier_endpoint_queues (endpoint_id, active, max_in_flight, rate_limit, host)
     values ($1, $2, $3, $4, $5)`,
    [id, status === 'enabled', fields.maxInFlight, fields.rateLimit, receiverHost(fields.url)],
  );
  return (await findEndpoint(db, appId, id))!;
}

/** Looks an endpoint of an application up by id or uid. */
export async function findEndpoint(db: Queryable, appId: string, idOrUid: string): Promise<Endpoint | null> {
  const { rows } = await db.query<EndpointRow>(
    `${SELECT} where e.app_id = $1 and (e.id = $2 or e.uid = $2) and e.deleted_at is null limit 1`,
    [appId, idOrUid],
  );
  return rows[0] ? fromRow(rows[0]) : null;
}

export async function getEndpointById(db: Queryable, id: string): Promise<Endpoint | null> {
  const { rows } = await db.query<EndpointRow>(`${SELECT} where e.id = $1`, [id]);
  return rows[0] ? fromRow(rows[0]) : null;
}

/** Locks the endpoint's row for a change of it; false once it is deleted. */
async function lockLiveRow(db: Queryable, id: string): Promise<boolean> {
  const { rows } = await db.query(
    'select 1 from courier_endpoints where id = $1 and deleted_at is null for no key update',
    [id],
  );
  return rows.length > 0;
}

/** The endpoint locked for an update, as it now is (a concurrent edit committed first is seen); null once deleted. */
export async function lockLiveEndpoint(db: Queryable, id: string): Promise<Endpoint | null> {
  return (await lockLiveRow(db, id)) ? getEndpointById(db, id) : null;
}

export async function listEndpoints(
  db: Queryable,
  appId: string,
  opts: { limit: number; after?: string; before?: string; descending?: boolean },
): Promise<Page<Endpoint>> {
  const { rows } = await db.query<EndpointRow>(
    `${SELECT} where e.app_id = $1 and e.deleted_at is null
       and ($2::text is null or e.id > $2) and ($3::text is null or e.id < $3)
     order by e.id ${opts.descending ? 'desc' : 'asc'} limit $4`,
    [appId, opts.after ?? null, opts.before ?? null, opts.limit + 1],
  );
  return { data: rows.slice(0, opts.limit).map(fromRow), done: rows.length <= opts.limit };
}

/**
 * Replaces an endpoint's settings and keeps its queue row's limits and host in step. A new URL is
 * likely another receiver: the old one's failure streak and the wait it asked for no longer apply.
 */
export async function updateEndpoint(
  db: Queryable,
  id: string,
  fields: EndpointFields,
  now: number,
): Promise<void> {
  const { rows } = await db.query<{ moved: boolean }>(
    `update courier_endpoints e set uid = $2, url = $3, description = $4, event_types = $5, channels = $6,
       rate_limit = $7, max_in_flight = $8, retry_policy = $9, headers = $10, metadata = $11,
       version = coalesce($12, e.version), updated_at = $13, public_only = coalesce($14, e.public_only),
       operator_max_in_flight = case when $15 then $16 else e.operator_max_in_flight end,
       operator_rate_limit = case when $15 then $17 else e.operator_rate_limit end,
       operator_limits_url = case when $15 then $3 else e.operator_limits_url end
       from courier_endpoints before
     where e.id = $1 and before.id = e.id
     returning before.url <> e.url as moved`,
    [
      id,
      fields.uid ?? null,
      fields.url,
      fields.description ?? '',
      fields.eventTypes ?? null,
      fields.channels ?? null,
      fields.rateLimit,
      fields.maxInFlight,
      jsonOrNull(fields.retryPolicy),
      JSON.stringify(fields.headers ?? {}),
      JSON.stringify(fields.metadata ?? {}),
      fields.version ?? null,
      toDate(now),
      fields.publicOnly ?? null,
      fields.operatorLimits !== undefined,
      fields.operatorLimits?.maxInFlight ?? null,
      fields.operatorLimits?.rateLimit ?? null,
    ],
  );
  await db.query(
    `update courier_endpoint_queues set max_in_flight = $2, rate_limit = $3, host = $5,
       failure_streak = case when $4 then 0 else failure_streak end,
       blocked_until = case when $4 then null else blocked_until end,
       retry_after_until = case when $4 then null else retry_after_until end
     where endpoint_id = $1`,
    [id, fields.maxInFlight, fields.rateLimit, rows[0]?.moved ?? false, receiverHost(fields.url)],
  );
  // A raised cap or rate limit can make held-back deliveries claimable now.
  await notifyWorkers(db);
}

/** Soft delete: nothing more is claimed for it; its history stays, its secrets expire (migration 0027). */
export async function deleteEndpoint(db: Queryable, id: string, now: number): Promise<void> {
  await db.query('update courier_endpoints set deleted_at = $2, uid = null where id = $1', [id, toDate(now)]);
  await db.query('update courier_endpoint_queues set active = false where endpoint_id = $1', [id]);
  await dropDeliveries(db, [id]);
}

/**
 * A deleted endpoint's deliveries: waiting, held or dead-lettered, none will be sent or replayed
 * again, so they leave the queue table. One a worker holds finishes its attempt first.
 */
export async function dropDeliveries(db: Queryable, endpointIds: readonly string[]): Promise<void> {
  // The states spelled out: each is a partial index of endpoint_id (no full scan of the table).
  await db.query(
    `delete from courier_deliveries
      where endpoint_id = any($1) and (state = 'pending' or state = 'held' or state in ('failed', 'expired'))
        and lease_owner is null`,
    [endpointIds],
  );
}

/**
 * The secret that signs from now on. Only it is opened: an earlier one still in its grace period
 * may be sealed with a key this process lacks (during a change of COURIER_SECRETS_KEY).
 */
export async function currentSecret(db: Queryable, endpointId: string): Promise<string | null> {
  const { rows } = await db.query<{ key: string }>(
    'select key from courier_endpoint_secrets where endpoint_id = $1 and expires_at is null',
    [endpointId],
  );
  return rows[0] ? openSecret(db, rows[0].key) : null;
}

/** An earlier secret this process cannot open (sealed by one on another key) is none it could be given again. */
function openedOrNull(db: Queryable, stored: string): string | null {
  try {
    return openSecret(db, stored);
  } catch {
    return null;
  }
}

/** At most this many earlier secrets sign beside the current one (as Svix allows): each adds a signature to every request. */
export const MAX_PREVIOUS_SECRETS = 5;

/**
 * The current secret signs from now on; the one it replaces keeps signing for graceMs. Earlier
 * secrets keep the grace their own rotation gave them. The same secret again changes nothing.
 * Refused (limit_reached) when the replaced one would be one earlier secret too many.
 */
export async function rotateSecret(
  db: Queryable,
  endpointId: string,
  newKey: string,
  graceMs: number,
  now: number,
): Promise<'rotated' | 'unchanged' | 'limit_reached'> {
  // One rotation at a time per endpoint: each sees the secret the previous one made current.
  if (!(await lockLiveRow(db, endpointId))) throw new StoreNotFoundError(`endpoint ${endpointId} not found`);
  const { rows } = await db.query<{ id: string; key: string; current: boolean }>(
    `select id::text, key, expires_at is null as current from courier_endpoint_secrets
      where endpoint_id = $1 and (expires_at is null or expires_at > $2)`,
    [endpointId, toDate(now)],
  );
  const current = rows.find((r) => r.current);
  if (current && openSecret(db, current.key) === newKey) return 'unchanged';
  // An earlier secret still in its grace period made current again leaves its earlier row: kept,
  // it would sign every request twice, and take one of the earlier secrets' places.
  const again = rows.find((r) => !r.current && openedOrNull(db, r.key) === newKey);
  if (graceMs > 0 && rows.length - (again ? 1 : 0) > MAX_PREVIOUS_SECRETS) return 'limit_reached';
  if (again) {
    await db.query('update courier_endpoint_secrets set expires_at = $2 where id = $1', [
      again.id,
      toDate(now),
    ]);
  }
  await db.query(
    'update courier_endpoint_secrets set expires_at = $2 where endpoint_id = $1 and expires_at is null',
    [endpointId, toDate(now + graceMs)],
  );
  await db.query('insert into courier_endpoint_secrets (endpoint_id, key, created_at) values ($1, $2, $3)', [
    endpointId,
    sealSecret(db, newKey),
    toDate(now),
  ]);
  return 'rotated';
}
