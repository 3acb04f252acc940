/** The same webhook job on the peers and on a hand-written pipeline, against the same receiver. */
import { fileURLToPath } from 'node:url';
import { runMigrations } from 'graphile-worker';
import PgBoss from 'pg-boss';
import {
  adminQuery,
  analyzeSchema,
  type BenchReceiver,
  DATABASE_URL,
  dropSchema,
  freshSchema,
  payload,
  spawnChild,
} from '../lib.ts';

const worker = (name: string) => fileURLToPath(new URL(`../workers/${name}.ts`, import.meta.url));

/** undici alone against the receiver: the ceiling of any system here. */
export async function ceiling(receiver: BenchReceiver, n: number): Promise<number> {
  await receiver.reset();
  const child = spawnChild([worker('ceiling'), receiver.url, String(n), '100']);
  const rate = await receiver.rate(n);
  await child.exited;
  return rate;
}

/** Claim 100 with SKIP LOCKED, POST, one UPDATE: the in-run ceiling of a PostgreSQL queue. */
export async function rawSql(receiver: BenchReceiver, n: number): Promise<number> {
  const schema = await freshSchema('bench_raw');
  try {
    await adminQuery(`
      create table ${schema}.raw_jobs (id bigserial primary key, state text not null default 'pending',
        run_at timestamptz not null default now(), body text not null);
      create index on ${schema}.raw_jobs (run_at) where state = 'pending';`);
    await adminQuery(`insert into ${schema}.raw_jobs (body) select $1 from generate_series(1, $2)`, [
      payload(),
      n,
    ]);
    await analyzeSchema(schema);
    await receiver.reset();
    const child = spawnChild([worker('raw-sql'), receiver.url, schema, '4']);
    const rate = await receiver.rate(n);
    await child.stop();
    return rate;
  } finally {
    await dropSchema(schema);
  }
}

/** graphile-worker 0.17.3: `default` settings or its documented performance preset. */
export async function graphile(
  receiver: BenchReceiver,
  n: number,
  preset: 'default' | 'performance',
): Promise<number> {
  const schema = await freshSchema('bench_gw');
  try {
    await runMigrations({ connectionString: DATABASE_URL, schema });
    // Bulk-queued with graphile-worker's own add_jobs, 1,000 per call.
    for (let done = 0; done < n; done += 1000) {
      const size = Math.min(1000, n - done);
      await adminQuery(
        `select ${schema}.add_jobs(array(select row('webhook', json_build_object('body', $1::text), null, null, null, null, null, null)::${schema}.job_spec from generate_series(1, $2)))`,
        [payload(), size],
      );
    }
    await analyzeSchema(schema);
    await receiver.reset();
    // Otherwise it logs a line per job, which its own perf test turns off the same way.
    const child = spawnChild([worker('graphile'), receiver.url, schema, preset], { NO_LOG_SUCCESS: '1' });
    const rate = await receiver.rate(n);
    await child.stop();
    return rate;
  } finally {
    await dropSchema(schema);
  }
}

/** pg-boss 10.4.2 with its batch fetch (the documented way to go fast), `pollers` work() calls. */
export async function pgBoss(
  receiver: BenchReceiver,
  n: number,
  batchSize: number,
  pollers: number,
): Promise<number> {
  const schema = await freshSchema('bench_boss');
  await dropSchema(schema); // pg-boss creates its schema itself
  const boss = new PgBoss({ connectionString: DATABASE_URL, schema, supervise: false, schedule: false });
  try {
    await boss.start();
    await boss.createQueue('webhook');
    const body = payload();
    for (let done = 0; done < n; done += 1000) {
      const size = Math.min(1000, n - done);
      await boss.insert(Array.from({ length: size }, () => ({ name: 'webhook', data: { body } })));
    }
    await analyzeSchema(schema);
    await receiver.reset();
    const child = spawnChild([worker('pgboss'), receiver.url, schema, String(batchSize), String(pollers)]);
    const rate = await receiver.rate(n);
    await child.stop(); // resolves once the process has exited
    return rate;
  } finally {
    await boss.stop({ graceful: false, wait: true }).catch(() => {});
    await dropSchema(schema);
  }
}
