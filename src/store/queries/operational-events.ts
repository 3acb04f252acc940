import type { Queryable } from '../db.ts';
import { toDate, toMs } from '../rows.ts';

export interface OperationalEvent {
  id: string;
  type: string;
  appId: string | null;
  endpointId: string | null;
  data: Record<string, unknown>;
  createdAt: number;
}

/** `relay`: to be sent to the operational webhook endpoints by a worker's relay (src/dispatch/operator-webhook.ts). */
export async function recordOperationalEvents(
  db: Queryable,
  events: readonly OperationalEvent[],
  relay: boolean,
): Promise<void> {
  if (events.length === 0) return;
  await db.query(
    `insert into courier_operational_events (id, type, app_id, endpoint_id, data, created_at, relayed)
     select u.*, not $7::boolean
       from unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::jsonb[], $6::timestamptz[]) as u`,
    [
      events.map((e) => e.id),
      events.map((e) => e.type),
      events.map((e) => e.appId),
      events.map((e) => e.endpointId),
      events.map((e) => JSON.stringify(e.data)),
      events.map((e) => toDate(e.createdAt)),
      relay,
    ],
  );
}

/**
 * Up to `limit` events still to relay, oldest first, locked until the
 * transaction ends; ones another relay holds are passed by.
 */
export async function lockUnrelayed(tx: Queryable, limit: number): Promise<OperationalEvent[]> {
  const { rows } = await tx.query<EventRow>(
    `select * from courier_operational_events where not relayed order by id limit $1 for update skip locked`,
    [limit],
  );
  return rows.map(fromRow);
}

/**
 * Whether an application's endpoints take messages of a type now (none: nothing would be stored
 * for them but the message): those a publish fans out to, bar any that want channels, which
 * operational events have none of. Locked as the publish locks them: none changes between this
 * read and the publish (one made meanwhile misses these events, as if made a moment later).
 */
export async function takenTypes(tx: Queryable, appId: string): Promise<(type: string) => boolean> {
  const { rows } = await tx.query<{ event_types: string[] | null }>(
    `select e.event_types from courier_endpoints e
      where e.app_id = $1 and e.deleted_at is null and e.status <> 'disabled'
        and (e.channels is null or cardinality(e.channels) = 0)
      for share`,
    [appId],
  );
  if (rows.some((r) => !r.event_types || r.event_types.length === 0)) return () => true;
  const types = new Set(rows.flatMap((r) => r.event_types!));
  return (type) => types.has(type);
}

export async function markRelayed(tx: Queryable, ids: readonly string[]): Promise<void> {
  await tx.query('update courier_operational_events set relayed = true where id = any($1)', [ids]);
}

export async function listOperationalEvents(
  db: Queryable,
  opts: { limit: number; after?: string },
): Promise<OperationalEvent[]> {
  const { rows } = await db.query<EventRow>(
    'select * from courier_operational_events where ($1::text is null or id > $1) order by id limit $2',
    [opts.after ?? null, opts.limit],
  );
  return rows.map(fromRow);
}

interface EventRow {
  id: string;
  type: string;
  app_id: string | null;
  endpoint_id: string | null;
  data: Record<string, unknown>;
  created_at: Date;
}

const fromRow = (r: EventRow): OperationalEvent => ({
  id: r.id,
  type: r.type,
  appId: r.app_id,
  endpointId: r.endpoint_id,
  data: r.data,
  createdAt: toMs(r.created_at)!,
});
