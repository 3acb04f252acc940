import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/clock.ts';
import { generateSecret } from '../../src/signing/index.ts';
import type { Database } from '../../src/store/db.ts';
import { openTestDatabase, type TestDatabase } from '../support/databases.ts';
import { makeApp, makeEndpoint, publishJson } from '../support/fixtures.ts';
import { type Script, ScriptedReceiver } from '../support/scripted-receiver.ts';
import { spawnWorker, stopWorker, type WorkerProcess } from '../support/worker-process.ts';

// Fast retries so a whole retry history fits in seconds; the lease outlasts the 1 s request timeout.
const WORKER_ENV = {
  COURIER_RETRY_BASE: '50ms',
  COURIER_RETRY_CAP: '200ms',
  COURIER_MAX_ATTEMPTS: '4',
  COURIER_RETRY_WINDOW: '1h',
  COURIER_REQUEST_TIMEOUT: '1s',
  COURIER_LEASE: '7s',
  COURIER_PAUSE_AFTER: '100000',
  COURIER_BATCH_SIZE: '50',
};

interface Plan {
  script: Script;
  /** Final state and attempt count the policy dictates for every message of this endpoint. */
  expect: { state: string; attempts: number };
  maxInFlight?: number;
  rateLimit?: number;
}

const ok = { status: 200 } as const;
const PLANS: Record<string, Plan> = {
  healthy: { script: () => ok, expect: { state: 'delivered', attempts: 1 } },
  flaky500: { script: (n) => (n === 1 ? { status: 500 } : ok), expect: { state: 'delivered', attempts: 2 } },
  throttled: {
    script: (n) => (n === 1 ? { status: 429, headers: { 'retry-after': '1' } } : ok),
    expect: { state: 'delivered', attempts: 2 },
  },
  gone: { script: () => ({ status: 410 }), expect: { state: 'failed', attempts: 1 } },
  missing: { script: () => ({ status: 404 }), expect: { state: 'expired', attempts: 4 } },
  broken: { script: () => ({ status: 503 }), expect: { state: 'expired', attempts: 4 } },
  timeout: { script: (n) => (n === 1 ? { hang: true } : ok), expect: { state: 'delivered', attempts: 2 } },
  reset: { script: (n) => (n === 1 ? { reset: true } : ok), expect: { state: 'delivered', attempts: 2 } },
  slow: {
    script: () => ({ status: 200, delayMs: 40 }),
    expect: { state: 'delivered', attempts: 1 },
    maxInFlight: 3,
  },
  rated: { script: () => ok, expect: { state: 'delivered', attempts: 1 }, rateLimit: 20 },
  unprocessable: {
    script: (n) => (n < 3 ? { status: 502 } : { status: 422 }),
    expect: { state: 'failed', attempts: 3 },
  },
};
const ENDPOINTS = 20;
const MESSAGES = 2_000;

async function waitForQuiet(db: Database, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const { rows } = await db.query<{ n: number }>(
      `select count(*)::int as n from courier_deliveries where state in ('pending', 'in_flight')`,
    );
    if (rows[0]!.n === 0) return;
    if (Date.now() > deadline) throw new Error(`${rows[0]!.n} deliveries still unfinished`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

describe('three worker processes on one PostgreSQL', () => {
  let t: TestDatabase;
  const receiver = new ScriptedReceiver();
  const workers: WorkerProcess[] = [];

  beforeAll(async () => {
    t = await openTestDatabase('pg');
    await receiver.start();
  });
  afterAll(async () => {
    await Promise.all(workers.map((w) => stopWorker(w, 'SIGKILL')));
    await receiver.close();
    await t.drop();
  });

  it('delivers 2,000 messages to 20 misbehaving endpoints exactly as the policy dictates', {
    timeout: 180_000,
  }, async () => {
    const now = systemClock.now();
    const app = await makeApp(t.db, now);
    const names = Object.keys(PLANS);
    const endpoints: { id: string; plan: Plan; name: string; secret: string }[] = [];
    for (let i = 0; i < ENDPOINTS; i++) {
      const kind = names[i % names.length]!;
      const name = `${kind}-${i}`;
      const secret = generateSecret();
      const plan = PLANS[kind]!;
      const ep = await makeEndpoint(
        t.db,
        app.id,
        now,
        {
          url: receiver.script(name, plan.script),
          maxInFlight: plan.maxInFlight ?? 10,
          rateLimit: plan.rateLimit ?? 1000,
          eventTypes: [`e${i}`],
        },
        secret,
      );
      endpoints.push({ id: ep.id, plan, name, secret });
    }
    // Workers first: their start-up (compiling TypeScript) must not disturb the receiver's measurements.
    workers.push(...(await Promise.all([0, 1, 2].map(() => spawnWorker(t.schema!, WORKER_ENV)))));
    for (let i = 0; i < MESSAGES; i++) {
      await publishJson(
        t.db,
        app.id,
        systemClock.now(),
        { i, text: 'héllo' },
        { eventType: `e${i % ENDPOINTS}` },
      );
    }

    await waitForQuiet(t.db, 120_000);

    // Every delivery ends where the policy says, with as many counted attempts as requests seen.
    const { rows } = await t.db.query<{
      message_id: string;
      endpoint_id: string;
      state: string;
      attempts: number;
    }>('select message_id, endpoint_id, state, attempts from courier_delivery_states');
    expect(rows).toHaveLength(MESSAGES);
    const byId = new Map(endpoints.map((e) => [e.id, e]));
    const mismatches: string[] = [];
    for (const row of rows) {
      const ep = byId.get(row.endpoint_id)!;
      const seen = receiver.requestsFor(row.message_id, ep.name).length;
      if (
        row.state !== ep.plan.expect.state ||
        row.attempts !== ep.plan.expect.attempts ||
        seen !== row.attempts
      ) {
        const { rows: tries } = await t.db.query<{ status_code: number | null; failure_kind: string | null }>(
          'select status_code, failure_kind, detail from courier_attempts where message_id = $1 and endpoint_id = $2 order by id',
          [row.message_id, row.endpoint_id],
        );
        const log = tries.map((a) => a.status_code ?? a.failure_kind).join(',');
        mismatches.push(
          `${ep.name} ${row.message_id}: ${row.state}/${row.attempts} attempts [${log}], receiver saw ${seen}`,
        );
      }
    }
    expect(mismatches.slice(0, 10)).toEqual([]);

    const { rows: attemptRows } = await t.db.query<{ n: number }>(
      'select count(*)::int as n from courier_attempts',
    );
    expect(attemptRows[0]!.n).toBe(receiver.seen.length);

    // Per-endpoint caps hold across the three processes; no message is in two workers' hands at once.
    const overCap = endpoints
      .map((ep) => ({
        name: ep.name,
        seen: receiver.maxConcurrent.get(`/ep/${ep.name}`) ?? 0,
        cap: ep.plan.maxInFlight ?? 10,
      }))
      .filter((e) => e.seen > e.cap);
    expect(overCap).toEqual([]);
    expect(receiver.maxSameId).toBe(1);

    // The rate limit holds across processes in any one-second window. Measured on the instants the
    // workers sent (attempt start times): this in-process receiver's own clock stalls under the
    // suite's load and would bunch arrivals; the chaos run measures at receivers in their own processes.
    for (const ep of endpoints.filter((e) => e.plan.rateLimit)) {
      const { rows: sends } = await t.db.query<{ at: Date }>(
        'select started_at as at from courier_attempts where endpoint_id = $1',
        [ep.id],
      );
      const times = sends.map((r) => r.at.getTime());
      const busiest = Math.max(
        ...times.map((start) => times.filter((at) => at >= start && at < start + 1_000).length),
      );
      expect(times).toHaveLength(100);
      expect(busiest).toBeLessThanOrEqual(ep.plan.rateLimit!);
    }

    // Retry-After: 1 was honoured.
    for (const ep of endpoints.filter((e) => e.name.startsWith('throttled'))) {
      for (const row of rows.filter((r) => r.endpoint_id === ep.id)) {
        const [first, second] = receiver.requestsFor(row.message_id, ep.name);
        expect(second!.at - first!.at).toBeGreaterThanOrEqual(950);
      }
    }

    // Same webhook-id and bytes on every attempt, a signature that the reference verifier accepts.
    for (const ep of endpoints) {
      const verifier = new Webhook(ep.secret);
      const mine = receiver.seen.filter((r) => r.path === `/ep/${ep.name}`);
      for (const req of mine) {
        const first = receiver.requestsFor(req.webhookId, ep.name)[0]!;
        expect(req.body.equals(first.body)).toBe(true);
        verifier.verify(req.body.toString(), req.headers as Record<string, string>);
      }
    }
  });
});
