import { CoalescedReads } from '../coalesced-reads.ts';
import { type Database, isDatabase, prepared, type Queryable } from '../db.ts';
import { toDate, toMs } from '../rows.ts';
import { dropDeliveries } from './endpoints.ts';

export interface Application {
  id: string;
  uid: string | null;
  name: string;
  rateLimit: number | null;
  retryPolicy: unknown;
  metadata: Record<string, string>;
  createdAt: number;
  updatedAt: number;
}

interface AppRow {
  id: string;
  uid: string | null;
  name: string;
  rate_limit: number | null;
  retry_policy: unknown;
  metadata: Record<string, string>;
  created_at: Date;
  updated_at: Date;
}

const fromRow = (r: AppRow): Application => ({
  id: r.id,
  uid: r.uid,
  name: r.name,
  rateLimit: r.rate_limit,
  retryPolicy: r.retry_policy,
  metadata: r.metadata,
  createdAt: toMs(r.created_at)!,
  updatedAt: toMs(r.updated_at)!,
});

export interface ApplicationFields {
  name: string;
  uid?: string | null;
  rateLimit?: number | null;
  retryPolicy?: unknown;
  metadata?: Record<string, string>;
}

export async function createApplication(
  db: Queryable,
  id: string,
  fields: ApplicationFields,
  now: number,
): Promise<Application> {
  const { rows } = await db.query<AppRow>(
    `insert into courier_applications (id, uid, name, rate_limit, retry_policy, metadata, created_at, updated_at)
     values ($1, $2, $3, $4, $5, $6, $7, $7) returning *`,
    [
      id,
      fields.uid ?? null,
      fields.name,
      fields.rateLimit ?? null,
      fields.retryPolicy === undefined ? null : JSON.stringify(fields.retryPolicy),
      JSON.stringify(fields.metadata ?? {}),
      toDate(now),
    ],
  );
  return fromRow(rows[0]!);
}

/**
 * Every API call on an application's resources starts here, a message's publish included: named,
 * so that it is not parsed and planned on each call, and on a database coalesced (lookups asked for
 * while one is under way go together in the next). Its columns are listed, as a prepared
 * statement's result must keep its shape when a later migration adds a column.
 */
const FIND_APPLICATIONS = prepared(
  'courier_find_applications',
  `select id, uid, name, rate_limit, retry_policy, metadata, created_at, updated_at
   from courier_applications where (id = any($1::text[]) or uid = any($1::text[])) and deleted_at is null`,
);

/** The live applications with these ids or uids, by the id or uid asked for. */
async function findApplications(q: Queryable, idsOrUids: string[]): Promise<Map<string, Application>> {
  const { rows } = await q.query<AppRow>(FIND_APPLICATIONS, [idsOrUids]);
  const apps = rows.map(fromRow);
  const found = new Map<string, Application>();
  // Should one key be an application's id and another's uid, the id wins.
  for (const app of apps) if (app.uid !== null) found.set(app.uid, app);
  for (const app of apps) found.set(app.id, app);
  return found;
}

/** Applications' lookups per database, most of them the API's. */
const lookups = new WeakMap<Database, CoalescedReads<Application>>();
const MAX_LOOKUPS = 100;

/** Looks an application up by id or uid. */
export async function findApplication(q: Queryable, idOrUid: string): Promise<Application | null> {
  // PostgreSQL refuses a NUL in text (a path's %00): that would fail every lookup of the batch.
  if (idOrUid.includes('\0')) return null;
  if (!isDatabase(q)) return (await findApplications(q, [idOrUid])).get(idOrUid) ?? null;
  let reads = lookups.get(q);
  if (!reads) {
    reads = new CoalescedReads((keys) => findApplications(q, keys), MAX_LOOKUPS);
    lookups.set(q, reads);
  }
  return (await reads.get(idOrUid)) ?? null;
}

/**
 * The application locked for an update, as it now is (a concurrent edit committed first is seen);
 * null once deleted. No key update: publishes (their messages' foreign key) go on meanwhile.
 */
export async function lockLiveApplication(db: Queryable, id: string): Promise<Application | null> {
  const { rows } = await db.query<AppRow>(
    'select * from courier_applications where id = $1 and deleted_at is null for no key update',
    [id],
  );
  return rows[0] ? fromRow(rows[0]) : null;
}

export async function updateApplication(
  db: Queryable,
  id: string,
  fields: ApplicationFields,
  now: number,
): Promise<Application> {
  const { rows } = await db.query<AppRow>(
    `update courier_applications set uid = $2, name = $3, rate_limit = $4, retry_policy = $5, metadata = $6, updated_at = $7
     where id = $1 and deleted_at is null returning *`,
    [
      id,
      fields.uid ?? null,
      fields.name,
      fields.rateLimit ?? null,
      fields.retryPolicy === undefined || fields.retryPolicy === null
        ? null
        : JSON.stringify(fields.retryPolicy),
      JSON.stringify(fields.metadata ?? {}),
      toDate(now),
    ],
  );
  if (!rows[0]) throw new Error(`application ${id} not found`);
  return fromRow(rows[0]);
}

export interface Page<T> {
  data: T[];
  done: boolean;
}

export async function listApplications(
  db: Queryable,
  opts: { limit: number; after?: string; before?: string; descending?: boolean },
): Promise<Page<Application>> {
  const { rows } = await db.query<AppRow>(
    `select * from courier_applications
      where deleted_at is null and ($1::text is null or id > $1) and ($2::text is null or id < $2)
      order by id ${opts.descending ? 'desc' : 'asc'} limit $3`,
    [opts.after ?? null, opts.before ?? null, opts.limit + 1],
  );
  return { data: rows.slice(0, opts.limit).map(fromRow), done: rows.length <= opts.limit };
}

/** Soft delete: the application's endpoints stop receiving; history stays until retention deletes it. */
export async function deleteApplication(db: Queryable, id: string, now: number): Promise<boolean> {
  const { rowCount } = await db.query(
    'update courier_applications set deleted_at = $2, uid = null where id = $1 and deleted_at is null',
    [id, toDate(now)],
  );
  if (rowCount > 0) {
    // Its tokens would still read the event types: they go now.
    await db.query('delete from courier_app_tokens where app_id = $1', [id]);
    // Endpoint rows before their queue rows: the store's lock order.
    await db.query(
      'update courier_endpoints set deleted_at = $2, uid = null where app_id = $1 and deleted_at is null',
      [id, toDate(now)],
    );
    const { rows } = await db.query<{ endpoint_id: string }>(
      `update courier_endpoint_queues set active = false
        where endpoint_id in (select id from courier_endpoints where app_id = $1)
        returning endpoint_id`,
      [id],
    );
    await dropDeliveries(
      db,
      rows.map((r) => r.endpoint_id),
    );
  }
  return rowCount > 0;
}
