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

export async function recordOperationalEvent(db: Queryable, event: OperationalEvent): Promise<void> {
  await recordOperationalEvents(db, [event]);
}

/** One statement for any number of events (a completion may dead-letter hundreds at once). */
export async function recordOperationalEvents(
  db: Queryable,
  events: readonly OperationalEvent[],
): Promise<void> {
  if (events.length === 0) return;
  await db.query(
    `insert into courier_operational_events (id, type, app_id, endpoint_id, data, created_at)
     select * from unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::jsonb[], $6::timestamptz[])`,
    [
      events.map((e) => e.id),
      events.map((e) => e.type),
      events.map((e) => e.appId),
      events.map((e) => e.endpointId),
      events.map((e) => JSON.stringify(e.data)),
      events.map((e) => toDate(e.createdAt)),
    ],
  );
}

export async function listOperationalEvents(
  db: Queryable,
  opts: { limit: number; after?: string },
): Promise<OperationalEvent[]> {
  const { rows } = await db.query<{
    id: string;
    type: string;
    app_id: string | null;
    endpoint_id: string | null;
    data: Record<string, unknown>;
    created_at: Date;
  }>('select * from courier_operational_events where ($1::text is null or id > $1) order by id limit $2', [
    opts.after ?? null,
    opts.limit,
  ]);
  return rows.map((r) => ({
    id: r.id,
    type: r.type,
    appId: r.app_id,
    endpointId: r.endpoint_id,
    data: r.data,
    createdAt: toMs(r.created_at)!,
  }));
}
