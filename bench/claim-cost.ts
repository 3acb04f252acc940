/**
 * Claim cost with N deliveries scheduled for later: the claim must not slow down as the future
 * backlog grows. Usage: tsx bench/claim-cost.ts [futureCount ...]   (default: 10000 1000000)
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { migrate } from '../src/store/migrate.ts';
import { PgDatabase } from '../src/store/pg.ts';
import { claim } from '../src/store/queries/claim.ts';
import { complete } from '../src/store/queries/complete.ts';
import { deliveredCompletion, makeApp, makeEndpoint, publishJson } from '../test/support/fixtures.ts';
import { analyzeSchema } from './lib.ts';

const URL = process.env.COURIER_BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const DUE = 2_000;
const ROUNDS = 20;

async function admin(sql: string) {
  const client = new pg.Client(URL);
  await client.connect();
  await client.query(sql);
  await client.end();
}

export async function measureClaimCost(
  future: number,
): Promise<{ future: number; claimMsP50: number; claimMsP99: number }> {
  const schema = `bench_${randomBytes(4).toString('hex')}`;
  await admin(`create schema ${schema}`);
  const db = new PgDatabase({ connectionString: URL, schema });
  try {
    await migrate(db);
    const now = Date.now();
    const app = await makeApp(db, now);
    const endpoints = [];
    for (let i = 0; i < 10; i++) {
      endpoints.push(
        await makeEndpoint(db, app.id, now, {
          url: 'http://127.0.0.1:1/',
          maxInFlight: 1000,
          rateLimit: 100_000,
        }),
      );
    }
    // The future backlog, in bulk: one message per delivery, scheduled a day ahead.
    await db.query(
      `insert into courier_messages (id, app_id, event_type, payload, created_at)
       select 'msg_future_' || g, $1, 'bench', convert_to(repeat('x', 1024), 'UTF8'), $2 from generate_series(1, $3) g`,
      [app.id, new Date(now), future],
    );
    await db.query(
      `insert into courier_deliveries (message_id, endpoint_id, state, next_attempt_at, created_at, updated_at)
       select 'msg_future_' || g, ($1::text[])[1 + g % 10], 'pending', $2, $3, $3 from generate_series(1, $4) g`,
      [endpoints.map((e) => e.id), new Date(now + 86_400_000), new Date(now), future],
    );
    await analyzeSchema(schema);
    for (let i = 0; i < DUE; i++) await publishJson(db, app.id, now, { i });
    const timings: number[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      const started = performance.now();
      const { deliveries: batch } = await claim(db, {
        owner: 'bench',
        now: Date.now(),
        leaseMs: 60_000,
        limit: 100,
      });
      timings.push(performance.now() - started);
      await complete(
        db,
        'bench',
        Date.now(),
        batch.map((d) => deliveredCompletion(d.id, 1, Date.now())),
        1000,
      );
    }
    timings.sort((a, b) => a - b);
    return {
      future,
      claimMsP50: Number(timings[Math.floor(ROUNDS / 2)]!.toFixed(2)),
      claimMsP99: Number(timings[ROUNDS - 1]!.toFixed(2)),
    };
  } finally {
    await db.close();
    await admin(`drop schema ${schema} cascade`);
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const counts = process.argv.slice(2).map(Number);
  for (const future of counts.length ? counts : [10_000, 1_000_000]) {
    console.log(JSON.stringify(await measureClaimCost(future)));
  }
}
