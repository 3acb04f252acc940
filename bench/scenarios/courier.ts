/** Courier end to end: publish through the engine (and the API), deliver with N worker processes. */
import { systemClock } from '../../src/clock.ts';
import { newId } from '../../src/ids.ts';
import { generateSecret } from '../../src/signing/index.ts';
import type { Database } from '../../src/store/db.ts';
import { migrate } from '../../src/store/migrate.ts';
import { PgDatabase } from '../../src/store/pg.ts';
import { publish } from '../../src/store/publisher.ts';
import { createApplication } from '../../src/store/repos/applications.ts';
import { createEndpoint } from '../../src/store/repos/endpoints.ts';
import {
  analyzeSchema,
  type BenchReceiver,
  concurrently,
  courierCli,
  DATABASE_URL,
  dropSchema,
  freshSchema,
  payload,
  peakRssMiB,
  spawnChild,
  waitFor,
  walBytes,
} from '../lib.ts';

export const ENDPOINTS = 20;

export interface CourierSetup {
  schema: string;
  db: Database;
  appId: string;
  close(): Promise<void>;
}

/** One application with ENDPOINTS endpoints on the receiver (event types e0…e19); returns its id. */
export async function createBenchApp(db: Database, receiverUrl: string): Promise<string> {
  await migrate(db);
  const now = systemClock.now();
  const app = await createApplication(db, newId('app', now), { name: 'bench' }, now);
  for (let i = 0; i < ENDPOINTS; i++) {
    await db.transaction((tx) =>
      createEndpoint(tx, {
        id: newId('ep', now),
        appId: app.id,
        fields: { url: `${receiverUrl}/ep${i}`, eventTypes: [`e${i}`], maxInFlight: 50, rateLimit: 100_000 },
        secret: generateSecret(),
        now,
      }),
    );
  }
  return app.id;
}

/** A fresh schema holding the bench application. */
export async function setupCourier(receiver: BenchReceiver): Promise<CourierSetup> {
  const schema = await freshSchema('bench_courier');
  const db = new PgDatabase({ connectionString: DATABASE_URL, schema, poolSize: 16 });
  const appId = await createBenchApp(db, receiver.url);
  return {
    schema,
    db,
    appId,
    async close() {
      await db.close();
      await dropSchema(schema);
    },
  };
}

/** Publishes n messages through the engine's publish path, `concurrency` at a time; returns messages/s. */
export async function publishMany(
  setup: Pick<CourierSetup, 'db' | 'appId'>,
  n: number,
  concurrency = 8,
  body = () => payload(),
): Promise<number> {
  return concurrently(n, concurrency, (i) => {
    const now = systemClock.now();
    return publish(setup.db, {
      appId: setup.appId,
      messageId: newId('msg', now),
      eventType: `e${i % ENDPOINTS}`,
      payload: Buffer.from(body()),
      now,
    });
  });
}

export function workerEnv(schema: string): Record<string, string> {
  return {
    COURIER_DATABASE_URL: DATABASE_URL,
    COURIER_SCHEMA: schema,
    COURIER_ALLOW_PRIVATE_NETWORKS: '127.0.0.0/8',
    COURIER_LOG_LEVEL: 'warn',
  };
}

/** Node flags go before the CLI (--trace-gc, --cpu-prof); `cli` may be another checkout's bin/courier.js (by default this checkout's, pinned: courierCli). */
export interface WorkerCommand {
  nodeFlags?: string[];
  cli?: string;
}

export async function startWorkers(
  schema: string,
  count: number,
  env: Record<string, string> = {},
  { nodeFlags = [], cli = courierCli().path }: WorkerCommand = {},
) {
  const workers = Array.from({ length: count }, () =>
    spawnChild([cli, 'worker'], { ...workerEnv(schema), COURIER_LOG_LEVEL: 'info', ...env }, nodeFlags),
  );
  await Promise.all(
    workers.map((w) =>
      waitFor(
        () => {
          // A bad flag or setting ends the worker at once: say so now, with its words, not in a minute.
          if (!w.running()) {
            throw new Error(
              `benchmark: a worker exited before it started:\n${w.output().trim().slice(-2_000)}`,
            );
          }
          return w.output().includes('worker started');
        },
        60_000,
        'a worker',
      ),
    ),
  );
  return workers;
}

export interface ThroughputResult {
  deliveriesPerSec: number;
  publishPerSec: number;
  /** WAL per message from the first publish until all were published (the payload included). */
  walBytesPerPublish: number;
  /** WAL per message from then until every completion was written and the delivered rows vacuumed. */
  walBytesPerDelivery: number;
  /** The two together: a message's whole life in WAL, published, delivered, cleaned up. */
  walBytesPerMessage: number;
  /** VmHWM of the largest of the worker processes. */
  peakRssMiB: number | null;
}

/**
 * `count` messages of 1 KiB and their deliveries, spread over the endpoints, inserted in bulk and
 * due at `dueAt` (a day ahead: the backlog the claim must not trip over; now: a flood to drain).
 */
export async function bulkDeliveries(setup: CourierSetup, count: number, dueAt: number): Promise<void> {
  const now = systemClock.now();
  await setup.db.query(
    `insert into courier_messages (id, app_id, event_type, payload, created_at)
     select 'msg_bulk_' || g, $1, 'bulk', convert_to(repeat('x', 1024), 'UTF8'), $2 from generate_series(1, $3) g`,
    [setup.appId, new Date(now), count],
  );
  await setup.db.query(
    `insert into courier_deliveries (message_id, endpoint_id, state, next_attempt_at, created_at, updated_at)
     select 'msg_bulk_' || g, e.ids[1 + g % cardinality(e.ids)], 'pending', $1, $2, $2
       from generate_series(1, $3) g, (select array_agg(id) as ids from courier_endpoints) e`,
    [new Date(dueAt), new Date(now), count],
  );
  if (dueAt <= now)
    await setup.db.query('update courier_endpoint_queues set next_due_at = $1', [new Date(dueAt)]);
  // A backlog that has been there a while: vacuumed and checkpointed, so neither the autovacuum
  // its million inserts trigger nor the checkpoint they force lands in the measured drain.
  await analyzeSchema(setup.schema, { vacuum: true });
  await setup.db.query('checkpoint');
}

/**
 * A schema with `count` deliveries due a day later, which drains then run on top of, one after
 * another (see drainOn): the backlog is inserted once however many rounds the bench runs.
 */
export async function setupBacklog(receiver: BenchReceiver, count: number): Promise<CourierSetup> {
  const setup = await setupCourier(receiver);
  await bulkDeliveries(setup, count, systemClock.now() + 86_400_000);
  return setup;
}

/**
 * Deliveries due by now, waiting or leased (a leased one stays 'pending'): the drain's own, not
 * the backlog's, due a day later. The due index answers it in milliseconds, backlog or not.
 */
async function unfinished(setup: CourierSetup): Promise<number> {
  const { rows } = await setup.db.query<{ n: number }>(
    `select count(*)::int as n from courier_deliveries where state = 'pending' and next_attempt_at <= now()`,
  );
  return rows[0]!.n;
}

/** Publishes n messages into `setup`, then drains them with `workers` processes; timed from first to last arrival. */
export async function drainOn(
  setup: CourierSetup,
  receiver: BenchReceiver,
  n: number,
  workers: number,
): Promise<ThroughputResult> {
  const wal0 = await walBytes();
  const publishPerSec = await publishMany(setup, n);
  const wal1 = await walBytes();
  await receiver.reset();
  const procs = await startWorkers(setup.schema, workers);
  try {
    const deliveriesPerSec = await receiver.rate(n);
    // The last arrivals' completions are written after them (up to 10 ms later, in batches).
    await waitFor(async () => (await unfinished(setup)) === 0, 30_000, 'the last completions');
    // The delivered rows' cleanup is part of their cost, whenever autovacuum would do it; counted
    // here, not left to land inside some later drain's window, which then starts on a clean table.
    await setup.db.query('vacuum courier_deliveries');
    const wal2 = await walBytes();
    const rss = Math.max(...procs.map((p) => peakRssMiB(p.proc.pid) ?? 0));
    return {
      deliveriesPerSec,
      publishPerSec,
      walBytesPerPublish: (wal1 - wal0) / n,
      walBytesPerDelivery: (wal2 - wal1) / n,
      walBytesPerMessage: (wal2 - wal0) / n,
      peakRssMiB: rss || null,
    };
  } finally {
    await Promise.all(procs.map((p) => p.stop()));
  }
}

/** Prefill n messages into a fresh schema, then drain them with `workers` processes. */
export async function courierThroughput(
  receiver: BenchReceiver,
  n: number,
  workers: number,
): Promise<ThroughputResult> {
  const setup = await setupCourier(receiver);
  try {
    return await drainOn(setup, receiver, n, workers);
  } finally {
    await setup.close();
  }
}
