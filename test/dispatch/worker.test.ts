import { Webhook } from 'standardwebhooks';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock, systemClock } from '../../src/clock.ts';
import { PolicyResolver } from '../../src/dispatch/policy-resolver.ts';
import { generateSecret } from '../../src/signing/index.ts';
import { type Database, preparedName } from '../../src/store/db.ts';
import { type Receiver, startReceiver } from '../delivery/receiver.ts';
import { BACKENDS, openTestDatabase, type TestDatabase } from '../support/databases.ts';
import { runningWorker, virtualWorker } from '../support/engine.ts';
import { makeApp, makeEndpoint, publishJson } from '../support/fixtures.ts';
import { intercepting } from '../support/intercepting.ts';
import { listenForWork } from '../support/transactions.ts';

async function deliveryRows(db: Database) {
  const { rows } = await db.query<{
    state: string;
    attempts: number;
    next_attempt_at: Date;
    endpoint_id: string;
  }>('select state, attempts, next_attempt_at, endpoint_id from courier_delivery_states order by id');
  return rows;
}

/** Polls until done() holds, for at most 5 s. */
async function until(done: () => boolean | Promise<boolean>): Promise<void> {
  const deadline = Date.now() + 5_000;
  while (!(await done()) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
}

describe.each(BACKENDS)('worker on %s', (backend) => {
  let t: TestDatabase;
  let receiver: Receiver;
  let status = 200;
  let extraHeaders: Record<string, string> = {};

  beforeEach(async () => {
    t = await openTestDatabase(backend);
    status = 200;
    extraHeaders = {};
    receiver = await startReceiver((_req, res) => {
      res.writeHead(status, extraHeaders);
      res.end('ok');
    });
  });
  afterEach(async () => {
    await receiver.close();
    await t.drop();
  });

  it('delivers a published message once, signed, and records the attempt', async () => {
    // The reference verifier checks webhook-timestamp against the real clock (5 minutes' tolerance).
    const { clock, worker, sender } = virtualWorker(t.db, { clock: new ManualClock(Date.now()) });
    const secret = generateSecret();
    const app = await makeApp(t.db, clock.now());
    const ep = await makeEndpoint(t.db, app.id, clock.now(), { url: `${receiver.url}/hook` }, secret);
    const published = await publishJson(t.db, app.id, clock.now(), { hello: 'world' });
    expect(published).toMatchObject({ created: true, deliveries: 1 });

    expect(await worker.runOnce()).toBe(1);
    expect(await worker.runOnce()).toBe(0);
    await sender.close();

    expect(receiver.requests).toHaveLength(1);
    const req = receiver.requests[0]!;
    expect(req.body.toString()).toBe('{"hello":"world"}');
    expect(req.headers['webhook-id']).toBe(published.messageId);
    expect(req.headers['user-agent']).toMatch(/Courier/);
    expect(req.headers['webhook-timestamp']).toBe(String(Math.floor(clock.now() / 1000)));
    // Checked by the standardwebhooks package, not by Courier's own verifier.
    expect(new Webhook(secret).verify(req.body.toString(), req.headers as Record<string, string>)).toEqual({
      hello: 'world',
    });

    const rows = await deliveryRows(t.db);
    expect(rows).toMatchObject([{ state: 'delivered', attempts: 1, endpoint_id: ep.id }]);
    const { rows: attempts } = await t.db.query<{ status_code: number; decision: string; number: number }>(
      'select status_code, decision, number from courier_attempts',
    );
    expect(attempts).toEqual([{ status_code: 200, decision: 'delivered', number: 1 }]);
    const { rows: queues } = await t.db.query<{ in_flight: number; next_due_at: Date | null }>(
      'select in_flight, next_due_at from courier_endpoint_queues',
    );
    // Nothing in flight, nothing due: the second claim found nothing and let the endpoint go.
    expect(queues).toEqual([{ in_flight: 0, next_due_at: null }]);
  });

  it('running, retries on time a delivery its own completion scheduled, with nothing else to wake it', async () => {
    const app = await makeApp(t.db, systemClock.now());
    await makeEndpoint(t.db, app.id, systemClock.now(), { url: receiver.url });
    const { sender, worker } = runningWorker(t.db, {
      policies: new PolicyResolver({ backoff: { baseMs: 200, jitter: 'none' } }),
    });
    status = 500;
    await worker.start();
    try {
      await publishJson(t.db, app.id, systemClock.now(), { n: 1 });
      const deadline = Date.now() + 5_000;
      while (receiver.requests.length < 1 && Date.now() < deadline)
        await new Promise((r) => setTimeout(r, 10));
      status = 200;
      // The retry falls due 200 ms later; no publish or NOTIFY follows, and the idle timer is 30 s.
      while (receiver.requests.length < 2 && Date.now() < deadline)
        await new Promise((r) => setTimeout(r, 10));
      expect(receiver.requests).toHaveLength(2);
    } finally {
      await worker.stop();
      await sender.close();
    }
  });

  it('running, spends one claim and one completion on a message at light load', async () => {
    const app = await makeApp(t.db, systemClock.now());
    await makeEndpoint(t.db, app.id, systemClock.now(), { url: receiver.url });
    // The worker's statements by prepared name: each is a round trip that wakes both processes.
    const statements: string[] = [];
    const counted = intercepting(t.db, (sql, _params, run) => {
      statements.push(preparedName(sql) ?? sql);
      return run();
    });
    const { sender, worker } = runningWorker(counted);
    await worker.start();
    try {
      const deliver = async (n: number) => {
        await publishJson(t.db, app.id, systemClock.now(), { n });
        await until(async () => (await deliveryRows(t.db))[n - 1]?.state === 'delivered');
        await new Promise((r) => setTimeout(r, 100));
      };
      await deliver(1); // and the endpoint's configuration is cached
      statements.length = 0;
      await deliver(2);
      // The claim that took it said nothing else was due: no second look, no next-due lookup.
      expect(statements).toEqual(['courier_claim_batch', 'courier_complete_rows']);
    } finally {
      await worker.stop();
      await sender.close();
    }
  });

  describe('running, with completions lingering up to a minute', () => {
    const inFlight = async () =>
      (await t.db.query<{ in_flight: number }>('select in_flight from courier_endpoint_queues')).rows[0]!
        .in_flight;
    const runWithCap = async (maxInFlight: number, body: () => Promise<void>) => {
      const app = await makeApp(t.db, systemClock.now());
      await makeEndpoint(t.db, app.id, systemClock.now(), { url: receiver.url, maxInFlight });
      const { sender, worker } = runningWorker(t.db, { completionLingerMs: 60_000 });
      await worker.start();
      try {
        await publishJson(t.db, app.id, systemClock.now(), { n: 1 });
        await body();
      } finally {
        await worker.stop();
        await sender.close();
      }
    };

    it('lets the completion of an endpoint far from its cap wait for others, and writes it at stop, waking the other workers', async () => {
      const listener = await listenForWork(t.db);
      await runWithCap(10, async () => {
        await until(() => receiver.requests.length === 1);
        expect(receiver.requests).toHaveLength(1);
        await new Promise((r) => setTimeout(r, 300));
        // Sent, and not yet written: the slot stays taken while the completion waits.
        expect(await deliveryRows(t.db)).toMatchObject([{ state: 'pending', attempts: 0 }]);
        expect(await inFlight()).toBe(1);
      });
      expect(await deliveryRows(t.db)).toMatchObject([{ state: 'delivered', attempts: 1 }]);
      expect(await inFlight()).toBe(0);
      // The publish's NOTIFY, then the stop's: the slot it freed is another worker's to use.
      expect(await listener.heard(2)).toBe(2);
      await listener.stop();
    });

    it('writes at once the completion of an endpoint it holds half the cap of', async () => {
      await runWithCap(2, async () => {
        await until(async () => (await deliveryRows(t.db))[0]?.state === 'delivered');
        // Well inside the minute: only the endpoint's need of its slot cut the wait short.
        expect(await deliveryRows(t.db)).toMatchObject([{ state: 'delivered', attempts: 1 }]);
        expect(await inFlight()).toBe(0);
      });
    });
  });

  it('retries a 500 on the backoff schedule with the same id and bytes, re-signed each time', async () => {
    const { clock, worker, sender } = virtualWorker(t.db);
    const app = await makeApp(t.db, clock.now());
    await makeEndpoint(t.db, app.id, clock.now(), { url: receiver.url });
    await publishJson(t.db, app.id, clock.now(), { n: 1 });
    status = 500;

    expect(await worker.runOnce()).toBe(1);
    let [row] = await deliveryRows(t.db);
    expect(row).toMatchObject({ state: 'pending', attempts: 1 });
    const wait = row!.next_attempt_at.getTime() - clock.now();
    expect(wait).toBeGreaterThanOrEqual(30_000); // equal jitter: [30 s, 60 s] for the first retry
    expect(wait).toBeLessThanOrEqual(60_000);

    expect(await worker.runOnce()).toBe(0); // not due yet: nothing is sent early
    clock.advance(wait);
    status = 200;
    expect(await worker.runOnce()).toBe(1);
    [row] = await deliveryRows(t.db);
    expect(row).toMatchObject({ state: 'delivered', attempts: 2 });
    await sender.close();

    const [first, second] = receiver.requests;
    expect(first!.body.equals(second!.body)).toBe(true);
    expect(first!.headers['webhook-id']).toBe(second!.headers['webhook-id']);
    expect(first!.headers['webhook-timestamp']).not.toBe(second!.headers['webhook-timestamp']);
  });

  it('fails permanently on 410 without retrying', async () => {
    const { clock, worker, sender } = virtualWorker(t.db);
    const app = await makeApp(t.db, clock.now());
    await makeEndpoint(t.db, app.id, clock.now(), { url: receiver.url });
    await publishJson(t.db, app.id, clock.now(), { n: 1 });
    status = 410;
    await worker.runOnce();
    clock.advance(86_400_000);
    expect(await worker.runOnce()).toBe(0);
    await sender.close();
    expect(await deliveryRows(t.db)).toMatchObject([{ state: 'failed', attempts: 1 }]);
    expect(receiver.requests).toHaveLength(1);
  });

  it('honours Retry-After when it is longer than the backoff', async () => {
    const { clock, worker, sender } = virtualWorker(t.db);
    const app = await makeApp(t.db, clock.now());
    await makeEndpoint(t.db, app.id, clock.now(), { url: receiver.url });
    await publishJson(t.db, app.id, clock.now(), { n: 1 });
    status = 429;
    extraHeaders = { 'retry-after': '600' };
    await worker.runOnce();
    const [row] = await deliveryRows(t.db);
    // Never sooner than asked; up to a tenth later (jitter).
    const delay = row!.next_attempt_at.getTime() - clock.now();
    expect(delay).toBeGreaterThanOrEqual(600_000);
    expect(delay).toBeLessThanOrEqual(660_000);
    const { rows } = await t.db.query<{ reason: string; delay_ms: number }>(
      'select reason, delay_ms from courier_attempts',
    );
    expect(rows).toEqual([{ reason: 'retry_after', delay_ms: delay }]);
    clock.advance(delay - 1_000);
    expect(await worker.runOnce()).toBe(0);
    clock.advance(1_000);
    status = 200;
    expect(await worker.runOnce()).toBe(1);
    await sender.close();
  });
});
