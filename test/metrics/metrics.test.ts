import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.ts';
import { newId } from '../../src/ids.ts';
import { silentLogger } from '../../src/logger.ts';
import { IDLE_MS } from '../../src/metrics/endpoint-attempts.ts';
import { CourierMetrics } from '../../src/metrics/metrics.ts';
import { serveMetrics } from '../../src/metrics/server.ts';
import type { Database, Transaction } from '../../src/store/db.ts';
import { PgDatabase } from '../../src/store/pg.ts';
import { holdEndpoint } from '../../src/store/queries/endpoint-status.ts';
import { createApplication, deleteApplication } from '../../src/store/repos/applications.ts';
import { deleteEndpoint } from '../../src/store/repos/endpoints.ts';
import { closedPort, type Receiver, startReceiver } from '../delivery/receiver.ts';
import { startApi } from '../e2e/support.ts';
import { BACKENDS, openTestDatabase, TEST_DATABASE_URL, type TestDatabase } from '../support/databases.ts';
import { runningWorker, virtualWorker } from '../support/engine.ts';
import { deliveredCompletion, makeApp, makeEndpoint, publishJson } from '../support/fixtures.ts';
import { intercepting } from '../support/intercepting.ts';
import { holdOpen } from '../support/transactions.ts';

/** The value of one series in the registry's text, or undefined when it is not there. */
async function sample(metrics: CourierMetrics, series: string): Promise<number | undefined> {
  const text = await metrics.registry.metrics();
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

/**
 * The database, but the first transaction's answer held until `release`: a scrape whose read is
 * made first and answers last. `answered` settles once that read is done.
 */
function holdingFirstAnswer(db: Database) {
  let release!: () => void;
  const gate = new Promise<void>((resolve) => {
    release = resolve;
  });
  let answer!: () => void;
  const answered = new Promise<void>((resolve) => {
    answer = resolve;
  });
  let first = true;
  const held: Database = Object.create(db, {
    transaction: {
      value: async <T>(fn: (tx: Transaction) => Promise<T>): Promise<T> => {
        const hold = first;
        first = false;
        const result = await db.transaction(fn);
        if (hold) {
          answer();
          await gate;
        }
        return result;
      },
    },
  });
  return { db: held, answered, release };
}

describe.each(BACKENDS)('metrics of a worker on %s', (backend) => {
  let t: TestDatabase;
  let receiver: Receiver;
  let held: (() => void) | null = null;
  beforeEach(async () => {
    t = await openTestDatabase(backend);
    receiver = await startReceiver((req, res) => {
      const status = { '/ok': 200, '/down': 503, '/gone': 410 }[req.url ?? ''] ?? 200;
      if (req.url === '/held') held = () => res.end();
      else res.writeHead(status).end();
    });
  });
  afterEach(async () => {
    held?.();
    await receiver.close();
    await t.drop();
  });

  it('counts each attempt by what became of the delivery and what the receiver answered, with its duration', async () => {
    const metrics = new CourierMetrics();
    const { clock, worker } = virtualWorker(t.db, { metrics });
    const app = await makeApp(t.db, clock.now());
    for (const path of ['/ok', '/down', '/gone']) {
      await makeEndpoint(t.db, app.id, clock.now(), { url: `${receiver.url}${path}` });
    }
    await makeEndpoint(t.db, app.id, clock.now(), { url: `http://127.0.0.1:${await closedPort()}/` });
    await publishJson(t.db, app.id, clock.now(), { n: 1 });
    expect(await worker.runOnce()).toBe(4);

    const attempts = (labels: string) => sample(metrics, `courier_attempts_total{${labels}}`);
    expect(await attempts('result="delivered",outcome="2xx"')).toBe(1);
    expect(await attempts('result="retry",outcome="5xx"')).toBe(1);
    expect(await attempts('result="failed",outcome="4xx"')).toBe(1);
    expect(await attempts('result="retry",outcome="connection_refused"')).toBe(1);
    expect(await sample(metrics, 'courier_attempt_duration_seconds_count{result="retry"}')).toBe(2);
    expect(await sample(metrics, 'courier_attempt_duration_seconds_count{result="delivered"}')).toBe(1);
    // Node's own figures come along; no endpoint's series unless asked for.
    expect(await metrics.registry.metrics()).toContain('\nprocess_cpu_seconds_total ');
    expect(await metrics.registry.metrics()).not.toContain('courier_endpoint_attempts_total');
  });

  it('counts the attempts of the first endpoints it attempts each apart, and the later ones together', async () => {
    const metrics = new CourierMetrics({ endpointSeries: 2 });
    const { clock, worker } = virtualWorker(t.db, { metrics });
    const app = await makeApp(t.db, clock.now());
    const attempts = (endpoint: string, result: string) =>
      sample(metrics, `courier_endpoint_attempts_total{endpoint_id="${endpoint}",result="${result}"}`);
    // Shown from 0, before any attempt.
    expect(await attempts('other', 'failed')).toBe(0);
    // Each endpoint made after the previous one's first attempt: the order they are met in is known.
    // A scrape after each: an endpoint given a place is shown at 0 first, its first attempt under other.
    const ids: string[] = [];
    for (const [n, path] of ['/ok', '/down', '/gone'].entries()) {
      ids.push((await makeEndpoint(t.db, app.id, clock.now(), { url: `${receiver.url}${path}` })).id);
      await publishJson(t.db, app.id, clock.now(), { n });
      expect(await worker.runOnce()).toBe(n + 1);
      await metrics.registry.metrics();
    }
    // The one past the limit stays there.
    await publishJson(t.db, app.id, clock.now(), { n: 3 });
    expect(await worker.runOnce()).toBe(3);
    expect(await attempts(ids[0]!, 'delivered')).toBe(3);
    expect(await attempts(ids[0]!, 'failed')).toBe(0);
    expect(await attempts(ids[1]!, 'retry')).toBe(2);
    expect(await attempts(ids[2]!, 'failed')).toBeUndefined();
    expect(await attempts('other', 'failed')).toBe(2);
    expect(await attempts('other', 'delivered')).toBe(1);
    expect(await attempts('other', 'retry')).toBe(1);
  });

  it("tells each named endpoint's application, and drops a deleted endpoint's series, freeing its place", async () => {
    const metrics = new CourierMetrics({ endpointSeries: 2 });
    metrics.watchEndpoints(t.db);
    const { clock, worker } = virtualWorker(t.db, { metrics });
    const acme = await createApplication(
      t.db,
      newId('app', clock.now()),
      { name: 'Acme', uid: 'acme' },
      clock.now(),
    );
    const other = await makeApp(t.db, clock.now());
    const a = await makeEndpoint(t.db, acme.id, clock.now(), { url: `${receiver.url}/ok`, uid: 'orders' });
    const b = await makeEndpoint(t.db, other.id, clock.now(), { url: `${receiver.url}/ok` });
    // Nothing named yet: no info.
    expect(await metrics.registry.metrics()).not.toMatch(/^courier_endpoint_info\{/m);
    await publishJson(t.db, acme.id, clock.now(), { n: 1 });
    await publishJson(t.db, other.id, clock.now(), { n: 2 });
    expect(await worker.runOnce()).toBe(2);
    const info = async () =>
      (await metrics.registry.metrics()).split('\n').filter((l) => l.startsWith('courier_endpoint_info{'));
    expect((await info()).sort()).toEqual(
      [
        `courier_endpoint_info{endpoint_id="${a.id}",endpoint_uid="orders",app_id="${acme.id}",app_uid="acme"} 1`,
        `courier_endpoint_info{endpoint_id="${b.id}",endpoint_uid="",app_id="${other.id}",app_uid=""} 1`,
      ].sort(),
    );
    // A third endpoint finds both places taken.
    const c = await makeEndpoint(t.db, acme.id, clock.now(), { url: `${receiver.url}/ok` });
    await publishJson(t.db, acme.id, clock.now(), { n: 3 });
    expect(await worker.runOnce()).toBe(2);
    const attempts = (endpoint: string) =>
      sample(metrics, `courier_endpoint_attempts_total{endpoint_id="${endpoint}",result="delivered"}`);
    expect(await attempts(c.id)).toBeUndefined();
    // a's and b's first attempts (before their series were shown at 0), and c's.
    expect(await attempts('other')).toBe(3);
    // Deleted: the next scrape finds it gone, the one after shows its attempts a last time, and the
    // third neither its info nor its attempts.
    await deleteEndpoint(t.db, a.id, clock.now());
    await metrics.registry.metrics();
    expect(await metrics.registry.metrics()).toContain(
      `courier_endpoint_attempts_total{endpoint_id="${a.id}"`,
    );
    const after = await metrics.registry.metrics();
    expect(after).not.toContain(a.id);
    expect(await info()).toEqual([
      `courier_endpoint_info{endpoint_id="${b.id}",endpoint_uid="",app_id="${other.id}",app_uid=""} 1`,
    ]);
    // Its place goes to the next endpoint attempted: its earlier attempts stay under other.
    await publishJson(t.db, acme.id, clock.now(), { n: 4 });
    expect(await worker.runOnce()).toBe(1);
    expect(await attempts(c.id)).toBe(0);
    await publishJson(t.db, acme.id, clock.now(), { n: 5 });
    expect(await worker.runOnce()).toBe(1);
    expect(await attempts(c.id)).toBe(1);
    expect(await attempts('other')).toBe(4);
    expect(await info()).toContain(
      `courier_endpoint_info{endpoint_id="${c.id}",endpoint_uid="",app_id="${acme.id}",app_uid="acme"} 1`,
    );
    // An application deleted takes its endpoints with it.
    await deleteApplication(t.db, acme.id, clock.now());
    await metrics.registry.metrics();
    expect(await info()).toEqual([
      `courier_endpoint_info{endpoint_id="${b.id}",endpoint_uid="",app_id="${other.id}",app_uid=""} 1`,
    ]);
    expect(await attempts(c.id)).toBeUndefined();
  });

  it("frees an idle endpoint's place for one waiting, on the clock given, its info gone in the same scrape", async () => {
    const clock = new ManualClock(Date.UTC(2026, 0, 1, 12));
    const metrics = new CourierMetrics({ endpointSeries: 1, clock });
    metrics.watchEndpoints(t.db);
    const { worker } = virtualWorker(t.db, { metrics, clock });
    const [first, second] = [await makeApp(t.db, clock.now()), await makeApp(t.db, clock.now())];
    const a = await makeEndpoint(t.db, first.id, clock.now(), { url: `${receiver.url}/ok` });
    const b = await makeEndpoint(t.db, second.id, clock.now(), { url: `${receiver.url}/ok` });
    await publishJson(t.db, first.id, clock.now(), { n: 1 });
    expect(await worker.runOnce()).toBe(1);
    expect(await metrics.registry.metrics()).toContain(`courier_endpoint_info{endpoint_id="${a.id}"`);
    clock.advance(IDLE_MS);
    await publishJson(t.db, second.id, clock.now(), { n: 2 });
    expect(await worker.runOnce()).toBe(1); // b waits for a place
    const freed = await metrics.registry.metrics();
    expect(freed).not.toContain(a.id);
    await publishJson(t.db, second.id, clock.now(), { n: 3 });
    expect(await worker.runOnce()).toBe(1);
    const text = await metrics.registry.metrics();
    expect(text).toContain(`courier_endpoint_info{endpoint_id="${b.id}"`);
    expect(text).toContain(`courier_endpoint_attempts_total{endpoint_id="${b.id}",result="delivered"} 0`);
    expect(text).toContain('courier_endpoint_attempts_total{endpoint_id="other",result="delivered"} 3');
  });

  it("shows a later scrape's labels over those of an earlier one answered last", async () => {
    const metrics = new CourierMetrics({ endpointSeries: 5 });
    const held = holdingFirstAnswer(t.db);
    metrics.watchEndpoints(held.db);
    const now = Date.now();
    const app = await makeApp(t.db, now);
    const a = await makeEndpoint(t.db, app.id, now, { url: `${receiver.url}/ok` });
    metrics.attempted(deliveredCompletion(1, 1, now), a.id);
    const first = metrics.registry.metrics();
    await held.answered;
    await deleteEndpoint(t.db, a.id, now);
    expect(await metrics.registry.metrics()).not.toContain(`courier_endpoint_info{endpoint_id="${a.id}"`);
    held.release();
    // The first scrape's read, made before the deletion, answers last: it changes nothing.
    expect(await first).not.toContain(`courier_endpoint_info{endpoint_id="${a.id}"`);
    await metrics.registry.metrics(); // its attempts shown a last time
    const last = await metrics.registry.metrics();
    expect(last).not.toContain(a.id);
    // Answered, not timed out: what kept its labels out was their age.
    expect(last).toMatch(/\ncourier_queue_read_errors_total\{figure="endpoint_info"\} 0\n/);
  });

  it('forgets no endpoint first attempted while a scrape reads the labels', async () => {
    const metrics = new CourierMetrics({ endpointSeries: 5 });
    const held = holdingFirstAnswer(t.db);
    metrics.watchEndpoints(held.db);
    const now = Date.now();
    const app = await makeApp(t.db, now);
    const [a, b] = [
      await makeEndpoint(t.db, app.id, now, { url: `${receiver.url}/ok` }),
      await makeEndpoint(t.db, app.id, now, { url: `${receiver.url}/ok` }),
    ];
    metrics.attempted(deliveredCompletion(1, 1, now), a.id);
    const first = metrics.registry.metrics();
    await held.answered;
    metrics.attempted(deliveredCompletion(2, 1, now), b.id);
    held.release();
    await first;
    const named = await metrics.registry.getSingleMetricAsString('courier_endpoint_attempts_total');
    expect(named).toContain(`{endpoint_id="${a.id}",result="delivered"} 0`);
    expect(named).toContain(`{endpoint_id="${b.id}",result="delivered"} 0`);
    expect(await metrics.registry.metrics()).toContain(`courier_endpoint_info{endpoint_id="${b.id}"`);
  });

  it("counts the worker's own failures apart, as no attempt", async () => {
    const metrics = new CourierMetrics();
    const broken = { send: () => Promise.reject(new Error('a bug in the sender')) };
    const { clock, worker } = virtualWorker(t.db, { metrics, sender: broken });
    const app = await makeApp(t.db, clock.now());
    await makeEndpoint(t.db, app.id, clock.now(), { url: `${receiver.url}/ok` });
    await publishJson(t.db, app.id, clock.now(), { n: 1 });
    expect(await worker.runOnce()).toBe(1);
    expect(await sample(metrics, 'courier_worker_own_failures_total')).toBe(1);
    expect(await metrics.registry.metrics()).not.toMatch(/^courier_attempts_total\{/m);
  });

  it('says how long claimable work has waited, on the clock given, leaving out endpoints that may not be sent to', async () => {
    const metrics = new CourierMetrics();
    const { clock, worker } = virtualWorker(t.db, { metrics });
    metrics.watchQueue(t.db, clock);
    const lag = () => sample(metrics, 'courier_queue_lag_seconds');
    expect(await lag()).toBe(0);
    const app = await makeApp(t.db, clock.now());
    const endpoints: string[] = [];
    for (let i = 0; i < 4; i++) {
      endpoints.push((await makeEndpoint(t.db, app.id, clock.now(), { url: `${receiver.url}/ok` })).id);
    }
    await publishJson(t.db, app.id, clock.now(), { n: 1 });
    clock.advance(90_000);
    expect(await lag()).toBe(90);
    const set = (endpoint: string, change: string, params: unknown[] = []) =>
      t.db.query(`update courier_endpoint_queues set ${change} where endpoint_id = $1`, [
        endpoint,
        ...params,
      ]);
    // A slow receiver holding its endpoint at its cap, a rate limit or Retry-After holding one, a
    // paused one: none of it is work a worker could take.
    await set(endpoints[0]!, 'in_flight = max_in_flight');
    await set(endpoints[1]!, 'blocked_until = $2', [new Date(clock.now() + 5_000)]);
    await set(endpoints[2]!, 'active = false');
    expect(await lag()).toBe(90);
    await set(endpoints[3]!, 'in_flight = max_in_flight');
    expect(await lag()).toBe(0);
    // A hold that ended 30 s ago: claimable since then.
    await set(endpoints[1]!, 'blocked_until = $2', [new Date(clock.now() - 30_000)]);
    expect(await lag()).toBe(30);
    await set(endpoints[1]!, 'blocked_until = null');
    await set(endpoints[0]!, 'in_flight = 0');
    await set(endpoints[3]!, 'in_flight = 0');
    expect(await worker.runOnce()).toBe(3);
    expect(await lag()).toBe(0);
  });

  it('counts the deliveries not yet finished by where they stand, and the dead letters apart', async () => {
    const metrics = new CourierMetrics();
    const { clock, worker } = virtualWorker(t.db, { metrics });
    metrics.watchQueue(t.db, clock);
    const expectDeliveries = async (want: Record<string, number>) => {
      for (const [state, n] of Object.entries(want)) {
        expect([state, await sample(metrics, `courier_queue_deliveries{state="${state}"}`)]).toEqual([
          state,
          n,
        ]);
      }
    };
    await expectDeliveries({ due: 0, scheduled: 0, in_flight: 0, held: 0 });
    const app = await makeApp(t.db, clock.now());
    for (const path of ['/ok', '/down', '/gone']) {
      await makeEndpoint(t.db, app.id, clock.now(), { url: `${receiver.url}${path}` });
    }
    const paused = await makeEndpoint(t.db, app.id, clock.now(), { url: `${receiver.url}/ok` });
    await publishJson(t.db, app.id, clock.now(), { n: 1 });
    await expectDeliveries({ due: 4, scheduled: 0, in_flight: 0, held: 0 });
    await holdEndpoint(t.db, paused.id, 'paused', null, clock.now());
    await expectDeliveries({ due: 3, scheduled: 0, in_flight: 0, held: 1 });
    const endpoints = async () => {
      const counts: Record<string, number | undefined> = {};
      for (const status of ['enabled', 'paused', 'disabled']) {
        counts[status] = await sample(metrics, `courier_endpoints{status="${status}"}`);
      }
      return counts;
    };
    expect(await endpoints()).toEqual({ enabled: 3, paused: 1, disabled: 0 });
    await holdEndpoint(t.db, paused.id, 'disabled', null, clock.now());
    await t.db.query('update courier_endpoints set deleted_at = $2 where id = $1', [
      (await makeEndpoint(t.db, app.id, clock.now(), { url: receiver.url })).id,
      new Date(clock.now()),
    ]);
    expect(await endpoints()).toEqual({ enabled: 3, paused: 0, disabled: 1 });
    const deadLetters = () => sample(metrics, 'courier_dead_letters');
    expect(await deadLetters()).toBe(0);
    // Delivered (gone from the queue), a retry waiting out its backoff, a dead letter (not counted
    // among them: in courier_dead_letters).
    expect(await worker.runOnce()).toBe(3);
    await expectDeliveries({ due: 0, scheduled: 1, in_flight: 0, held: 1 });
    expect(await deadLetters()).toBe(1);
    // Given up on time, it is one too.
    await t.db.query("update courier_deliveries set state = 'expired' where state = 'failed'");
    expect(await deadLetters()).toBe(1);
    clock.advance(3_600_000);
    await expectDeliveries({ due: 1, scheduled: 0, in_flight: 0, held: 1 });
  });

  it("counts the worker's claims that failed, retried", async () => {
    const metrics = new CourierMetrics();
    const gone = new PgDatabase({
      connectionString: `postgres://postgres@127.0.0.1:${await closedPort()}/test`,
    });
    const { worker } = runningWorker(gone, { metrics });
    await worker.start();
    try {
      for (
        let i = 0;
        i < 500 && !(await sample(metrics, 'courier_worker_database_errors_total{operation="claim"}'));
        i++
      ) {
        await new Promise((r) => setTimeout(r, 10));
      }
      expect(
        await sample(metrics, 'courier_worker_database_errors_total{operation="claim"}'),
      ).toBeGreaterThanOrEqual(1);
    } finally {
      await worker.stop(1_000);
      await gone.close();
    }
  });

  it("counts the worker's writes of outcomes that failed, retried, and the attempt once", async () => {
    const metrics = new CourierMetrics();
    let failures = 2;
    const flaky = intercepting(t.db, (sql, _params, run) =>
      sql.includes('courier_complete_rows') && failures-- > 0
        ? Promise.reject(new Error('connection lost'))
        : run(),
    );
    const { clock, worker } = virtualWorker(flaky, { metrics });
    const app = await makeApp(t.db, clock.now());
    await makeEndpoint(t.db, app.id, clock.now(), { url: `${receiver.url}/ok` });
    await publishJson(t.db, app.id, clock.now(), { n: 1 });
    while ((await worker.runOnce()) > 0) {}
    expect(await sample(metrics, 'courier_worker_database_errors_total{operation="write"}')).toBe(2);
    expect(await sample(metrics, 'courier_attempts_total{result="delivered",outcome="2xx"}')).toBe(1);
    const { rows } = await t.db.query<{ attempts: number; deliveries: number }>(
      `select (select count(*)::int from courier_attempts) as attempts,
              (select count(*)::int from courier_deliveries) as deliveries`,
    );
    expect(rows[0]).toEqual({ attempts: 1, deliveries: 0 });
  });

  it("reads the worker's requests in flight as they are", async () => {
    const metrics = new CourierMetrics();
    const { worker } = runningWorker(t.db, { metrics });
    metrics.watchWorker(worker);
    metrics.watchQueue(t.db, { now: () => Date.now() });
    const app = await makeApp(t.db, Date.now());
    // One in flight at a time: the second message waits, due, for the first's request to end.
    await makeEndpoint(t.db, app.id, Date.now(), { url: `${receiver.url}/held`, maxInFlight: 1 });
    await worker.start();
    try {
      await publishJson(t.db, app.id, Date.now(), { n: 1 });
      await publishJson(t.db, app.id, Date.now(), { n: 2 });
      for (let i = 0; i < 500 && !held; i++) await new Promise((r) => setTimeout(r, 10));
      expect(await sample(metrics, 'courier_worker_in_flight_requests')).toBe(1);
      // Claimed, still pending with its lease: in flight, no longer due.
      expect(await sample(metrics, 'courier_queue_deliveries{state="in_flight"}')).toBe(1);
      expect(await sample(metrics, 'courier_queue_deliveries{state="due"}')).toBe(1);
      // Read on a clock a minute behind the claim's: claimed is claimed, not scheduled.
      const behind = new CourierMetrics();
      behind.watchQueue(t.db, { now: () => Date.now() - 60_000 });
      for (const [state, n] of [
        ['in_flight', 1],
        ['scheduled', 1],
        ['due', 0],
      ] as const) {
        expect([state, await sample(behind, `courier_queue_deliveries{state="${state}"}`)]).toEqual([
          state,
          n,
        ]);
      }
      const delivered = () => sample(metrics, 'courier_attempts_total{result="delivered",outcome="2xx"}');
      for (let i = 0; i < 500 && (await delivered()) !== 2; i++) {
        held?.();
        held = null;
        await new Promise((r) => setTimeout(r, 10));
      }
      for (let i = 0; i < 500 && worker.inFlight > 0; i++) await new Promise((r) => setTimeout(r, 10));
      expect(await sample(metrics, 'courier_worker_in_flight_requests')).toBe(0);
    } finally {
      await worker.stop(1_000);
    }
    expect(await sample(metrics, 'courier_worker_unwritten_outcomes')).toBe(0);
    expect(await sample(metrics, 'courier_attempts_total{result="delivered",outcome="2xx"}')).toBe(2);
  });
});

describe("a worker's figures", () => {
  it('are read from it at each scrape', async () => {
    const metrics = new CourierMetrics();
    const worker = { inFlight: 2, unwritten: 3, lateReleases: 5 };
    metrics.watchWorker(worker);
    expect(await sample(metrics, 'courier_worker_in_flight_requests')).toBe(2);
    expect(await sample(metrics, 'courier_worker_unwritten_outcomes')).toBe(3);
    expect(await sample(metrics, 'courier_worker_late_releases_total')).toBe(5);
    worker.lateReleases = 7;
    expect(await sample(metrics, 'courier_worker_late_releases_total')).toBe(7);
  });
});

describe('the metrics port', () => {
  it('answers GET and HEAD /metrics in the text format, 404 elsewhere, 405 for other methods; NaN for a database it cannot read', async () => {
    const t = await openTestDatabase('pg');
    const db = new PgDatabase({ connectionString: TEST_DATABASE_URL, schema: t.schema, poolSize: 1 });
    const metrics = new CourierMetrics();
    metrics.watchQueue(db, { now: () => Date.now() });
    const server = await serveMetrics(metrics, { host: '127.0.0.1', port: 0 }, silentLogger);
    try {
      const got = await fetch(`${server.address}/metrics`);
      expect(got.status).toBe(200);
      expect(got.headers.get('content-type')).toBe('text/plain; version=0.0.4; charset=utf-8');
      expect(await got.text()).toMatch(/\ncourier_queue_lag_seconds 0\n/);
      expect((await fetch(`${server.address}/metrics`, { method: 'HEAD' })).status).toBe(200);
      expect((await fetch(`${server.address}/`)).status).toBe(404);
      const post = await fetch(`${server.address}/metrics`, { method: 'POST' });
      expect([post.status, post.headers.get('allow')]).toEqual([405, 'GET, HEAD']);
      // Its one connection held by a transaction: the read gives up after 2 s, the rest is scraped.
      let release!: () => void;
      const held = db.transaction(() => new Promise<void>((resolve) => (release = resolve)));
      const started = Date.now();
      const slow = await (await fetch(`${server.address}/metrics`)).text();
      release();
      await held;
      expect(Date.now() - started).toBeLessThan(5_000);
      // prom-client writes Nan, which Prometheus reads as NaN (case is not significant there).
      expect(slow).toMatch(/\ncourier_queue_lag_seconds Nan\n/);
      await db.close();
      const text = await (await fetch(`${server.address}/metrics`)).text();
      expect(text).toMatch(/\ncourier_queue_lag_seconds Nan\n/);
      // Read as the scrape begins, beside the lag being read: the earlier scrape's failure.
      expect(text).toMatch(/\ncourier_queue_read_errors_total\{figure="lag"\} 1\n/);
      expect(text).toMatch(/\ncourier_queue_read_errors_total\{figure="deliveries"\} 1\n/);
      expect(text).toMatch(/\ncourier_queue_deliveries\{state="due"\} Nan\n/);
      expect(text).toContain('\nprocess_cpu_seconds_total ');
    } finally {
      await server.close();
      await t.drop();
    }
  });

  it('stops its reads of a database that has not answered in 2 s, leaving none to pile up there', async () => {
    const t = await openTestDatabase('pg');
    const db = new PgDatabase({ connectionString: TEST_DATABASE_URL, schema: t.schema, poolSize: 4 });
    const metrics = new CourierMetrics();
    metrics.watchQueue(db, { now: () => Date.now() });
    const first = await metrics.registry.metrics();
    expect(first).toMatch(/\ncourier_queue_read_errors_total\{figure="lag"\} 0\n/);
    expect(first).toMatch(/\ncourier_queue_read_errors_total\{figure="deliveries"\} 0\n/);
    expect(first).toMatch(/\ncourier_queue_read_errors_total\{figure="endpoints"\} 0\n/);
    expect(first).toMatch(/\ncourier_queue_read_errors_total\{figure="dead_letters"\} 0\n/);
    // The four reads wait behind the lock, a connection each, until their statements are stopped.
    const lock = await holdOpen(t.db, (tx) =>
      tx.query(
        'lock table courier_endpoint_queues, courier_deliveries, courier_endpoints in access exclusive mode',
      ),
    );
    try {
      const text = await metrics.registry.metrics();
      expect(text).toMatch(/\ncourier_queue_lag_seconds Nan\n/);
      expect(text).toMatch(/\ncourier_queue_deliveries\{state="held"\} Nan\n/);
      expect(text).toMatch(/\ncourier_endpoints\{status="paused"\} Nan\n/);
      expect(text).toMatch(/\ncourier_dead_letters Nan\n/);
      const waiting = async () =>
        (
          await t.db.query<{ n: number }>(
            'select count(*)::int as n from pg_stat_activity where $1 = any(pg_blocking_pids(pid))',
            [lock.pid],
          )
        ).rows[0]!.n;
      for (let i = 0; i < 100 && (await waiting()) > 0; i++) await new Promise((r) => setTimeout(r, 10));
      expect(await waiting()).toBe(0);
      // Each failed read counted once, under its own figure.
      const errors = await metrics.registry.getSingleMetricAsString('courier_queue_read_errors_total');
      for (const figure of ['lag', 'deliveries', 'endpoints', 'dead_letters'])
        expect(errors).toMatch(
          new RegExp(`\ncourier_queue_read_errors_total\\{figure="${figure}"\\} 1(\n|$)`),
        );
    } finally {
      await lock.commit();
      await db.close();
      await t.drop();
    }
  });

  it("keeps the endpoints' last labels and series through a read that fails, counted", async () => {
    const t = await openTestDatabase('pg');
    const db = new PgDatabase({ connectionString: TEST_DATABASE_URL, schema: t.schema, poolSize: 2 });
    const metrics = new CourierMetrics({ endpointSeries: 5 });
    metrics.watchEndpoints(db);
    // Once is enough: a second call neither registers the gauge again nor throws.
    expect(() => metrics.watchEndpoints(db)).not.toThrow();
    try {
      const app = await makeApp(t.db, Date.now());
      const endpoint = await makeEndpoint(t.db, app.id, Date.now(), { url: 'http://127.0.0.1:9/' });
      metrics.attempted(deliveredCompletion(1, 1, Date.now()), endpoint.id);
      const info = `\ncourier_endpoint_info{endpoint_id="${endpoint.id}",endpoint_uid="",app_id="${app.id}",app_uid=""} 1\n`;
      const attempts = `\ncourier_endpoint_attempts_total{endpoint_id="${endpoint.id}",result="delivered"} 0\n`;
      const first = await metrics.registry.metrics();
      expect(first).toContain(info);
      expect(first).toMatch(/\ncourier_queue_read_errors_total\{figure="endpoint_info"\} 0\n/);
      // The queue's figures are another process's, unless asked for.
      expect(first).not.toContain('figure="lag"');
      // Deleted, but not yet committed, behind a lock the read waits on until it is stopped.
      const lock = await holdOpen(t.db, async (tx) => {
        await deleteEndpoint(tx, endpoint.id, Date.now());
        await tx.query('lock table courier_endpoints in access exclusive mode');
      });
      try {
        expect(await metrics.registry.metrics()).toContain(info);
        const errors = await metrics.registry.getSingleMetricAsString('courier_queue_read_errors_total');
        expect(errors).toMatch(/\ncourier_queue_read_errors_total\{figure="endpoint_info"\} 1(\n|$)/);
        expect(
          `\n${await metrics.registry.getSingleMetricAsString('courier_endpoint_attempts_total')}\n`,
        ).toContain(attempts);
      } finally {
        await lock.commit();
      }
      // Read again, it is gone: its attempts shown a last time, then removed.
      await metrics.registry.metrics();
      await metrics.registry.metrics();
      const after = await metrics.registry.metrics();
      expect(after).not.toContain(endpoint.id);
      expect(after).toMatch(/\ncourier_queue_read_errors_total\{figure="endpoint_info"\} 1\n/);
    } finally {
      await db.close();
      await t.drop();
    }
  });

  it("answers a HEAD without collecting: a new endpoint's series is shown at 0 by a GET", async () => {
    const metrics = new CourierMetrics({ endpointSeries: 1 });
    const server = await serveMetrics(metrics, { host: '127.0.0.1', port: 0 }, silentLogger);
    try {
      metrics.attempted(deliveredCompletion(1, 1, Date.now()), 'ep_new');
      const head = await fetch(`${server.address}/metrics`, { method: 'HEAD' });
      expect([head.status, head.headers.get('content-type')]).toEqual([200, metrics.registry.contentType]);
      metrics.attempted(deliveredCompletion(2, 1, Date.now()), 'ep_new');
      const text = await (await fetch(`${server.address}/metrics`)).text();
      expect(text).toContain(
        '\ncourier_endpoint_attempts_total{endpoint_id="ep_new",result="delivered"} 0\n',
      );
      expect(text).toContain('\ncourier_endpoint_attempts_total{endpoint_id="other",result="delivered"} 2\n');
    } finally {
      await server.close();
    }
  });

  it('refuses to start on a port already taken, saying so', async () => {
    const metrics = new CourierMetrics();
    const first = await serveMetrics(metrics, { host: '127.0.0.1', port: 0 }, silentLogger);
    try {
      const port = Number(new URL(first.address).port);
      await expect(serveMetrics(metrics, { host: '127.0.0.1', port }, silentLogger)).rejects.toThrow(
        /EADDRINUSE/,
      );
    } finally {
      await first.close();
    }
  });
});

describe("the API's requests", () => {
  it('are counted by method, route pattern and status, and timed; paths no route has as unmatched', async () => {
    const metrics = new CourierMetrics();
    const api = await startApi({ metrics });
    try {
      expect((await api.request('POST', '/api/v1/app', { body: { name: 'Counted' } })).status).toBe(201);
      expect((await api.request('GET', '/api/v1/app/nobody')).status).toBe(404);
      expect((await api.request('GET', '/api/v1/nothing-here')).status).toBe(404);
      expect(
        await sample(
          metrics,
          'courier_http_requests_total{method="POST",route="/api/v1/app",status_code="201"}',
        ),
      ).toBe(1);
      expect(
        await sample(
          metrics,
          'courier_http_requests_total{method="GET",route="/api/v1/app/:app_id",status_code="404"}',
        ),
      ).toBe(1);
      expect(
        await sample(
          metrics,
          'courier_http_requests_total{method="GET",route="unmatched",status_code="404"}',
        ),
      ).toBe(1);
      expect(
        await sample(
          metrics,
          'courier_http_request_duration_seconds_count{method="POST",route="/api/v1/app"}',
        ),
      ).toBe(1);
    } finally {
      await api.close();
    }
  });
});
