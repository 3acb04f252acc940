/** What the run left behind: Courier's rows (read straight from PostgreSQL) and the receivers' logs. */
import pg from 'pg';
import type { ReceiverReport } from './receiver.ts';

export interface DeliveryRow {
  id: number;
  messageId: string;
  endpointIndex: number;
  state: string;
  attempts: number;
}

export interface AttemptRow {
  deliveryId: number;
  number: number;
  startedAt: number;
  /** From the recorded start until the worker had its outcome. */
  durationMs: number;
  status: number | null;
  failure: string | null;
  decision: string;
}

export interface CourierRows {
  /** Message id → the seq its payload carries. */
  messages: Map<string, number>;
  deliveries: DeliveryRow[];
  attempts: AttemptRow[];
}

export async function adminQuery<T>(databaseUrl: string, sql: string, schema?: string): Promise<T[]> {
  const client = new pg.Client({ connectionString: databaseUrl, connectionTimeoutMillis: 5_000 });
  client.on('error', () => {}); // a PostgreSQL restart cuts this connection; the query then rejects
  await client.connect();
  try {
    if (schema) await client.query(`set search_path to ${schema}`);
    return (await client.query(sql)).rows as T[];
  } finally {
    await client.end().catch(() => {});
  }
}

export async function stateCounts(databaseUrl: string, schema: string): Promise<Record<string, number>> {
  const rows = await adminQuery<{ state: string; n: number }>(
    databaseUrl,
    'select state, count(*)::int as n from courier_delivery_states group by state',
    schema,
  );
  return Object.fromEntries(rows.map((r) => [r.state, r.n]));
}

export async function readCourier(databaseUrl: string, schema: string): Promise<CourierRows> {
  const [messages, deliveries, attempts] = await Promise.all([
    adminQuery<{ id: string; seq: string }>(
      databaseUrl,
      `select id, convert_from(payload, 'UTF8')::jsonb->>'seq' as seq from courier_messages`,
      schema,
    ),
    adminQuery<{ id: string; message_id: string; uid: string; state: string; attempts: number }>(
      databaseUrl,
      `select d.id, d.message_id, e.uid, d.state, d.attempts
         from courier_delivery_states d join courier_endpoints e on e.id = d.endpoint_id`,
      schema,
    ),
    adminQuery<{
      delivery_id: string;
      number: number;
      started: string;
      duration_ms: number;
      status_code: number | null;
      failure_kind: string | null;
      decision: string;
    }>(
      databaseUrl,
      `select delivery_id, number, (extract(epoch from started_at) * 1000)::bigint::text as started,
              duration_ms, status_code, failure_kind, decision
         from courier_attempts order by delivery_id, started_at, number`,
      schema,
    ),
  ]);
  return {
    messages: new Map(messages.map((m) => [m.id, Number(m.seq)])),
    deliveries: deliveries.map((d) => ({
      id: Number(d.id),
      messageId: d.message_id,
      endpointIndex: Number(d.uid.replace(/^ep-/, '')),
      state: d.state,
      attempts: d.attempts,
    })),
    attempts: attempts.map((a) => ({
      deliveryId: Number(a.delivery_id),
      number: a.number,
      startedAt: Number(a.started),
      durationMs: a.duration_ms,
      status: a.status_code,
      failure: a.failure_kind,
      decision: a.decision,
    })),
  };
}

export async function readReceiver(controlPort: number): Promise<ReceiverReport> {
  const response = await fetch(`http://127.0.0.1:${controlPort}/report`);
  return (await response.json()) as ReceiverReport;
}

export async function calmReceiver(controlPort: number): Promise<void> {
  await fetch(`http://127.0.0.1:${controlPort}/calm`, { method: 'POST' });
}
