/**
 * The retry policy an application or endpoint carries (`retryPolicy`), as the worker applies it:
 * installation, then application, then endpoint (mergeOverrides in policy-resolver.ts).
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Database } from '../../src/store/db.ts';
import { type Receiver, startReceiver } from '../delivery/receiver.ts';
import { BACKENDS, openTestDatabase, type TestDatabase } from '../support/databases.ts';
import { virtualWorker } from '../support/engine.ts';
import { makeApp, makeEndpoint, publishJson } from '../support/fixtures.ts';

/** Each endpoint's delivery: where it stands and when it is due next (ms after `since`). */
async function deliveries(db: Database, since: number) {
  const { rows } = await db.query<{
    endpoint_id: string;
    state: string;
    attempts: number;
    next_attempt_at: Date | null;
  }>('select endpoint_id, state, attempts, next_attempt_at from courier_delivery_states');
  return Object.fromEntries(
    rows.map((r) => [
      r.endpoint_id,
      {
        state: r.state,
        attempts: r.attempts,
        dueIn: r.state === 'pending' && r.next_attempt_at ? r.next_attempt_at.getTime() - since : null,
      },
    ]),
  );
}

const schedule = (...scheduleMs: number[]) => ({ kind: 'schedule', scheduleMs, jitter: 'none' });

describe.each(BACKENDS)('per-application and per-endpoint retry policies on %s', (backend) => {
  let t: TestDatabase;
  let receiver: Receiver;
  let status: number;

  beforeEach(async () => {
    t = await openTestDatabase(backend);
    status = 200;
    receiver = await startReceiver((_req, res) => {
      res.writeHead(status);
      res.end();
    });
  });
  afterEach(async () => {
    await receiver.close();
    await t.drop();
  });

  it("retries on the application's schedule, not the installation's backoff", async () => {
    // The installation's backoff would wait an hour; the application asks for 5 s, then 7 s.
    const { clock, worker, sender } = virtualWorker(t.db, {
      policy: { backoff: { baseMs: 3_600_000, jitter: 'none' } },
    });
    const app = await makeApp(t.db, clock.now(), { backoff: schedule(5_000, 7_000) });
    const ep = await makeEndpoint(t.db, app.id, clock.now(), { url: receiver.url });
    await publishJson(t.db, app.id, clock.now(), {});
    const start = clock.now();
    status = 503;

    expect(await worker.runOnce()).toBe(1);
    expect(await deliveries(t.db, start)).toEqual({
      [ep.id]: { state: 'pending', attempts: 1, dueIn: 5_000 },
    });
    clock.advance(4_999);
    expect(await worker.runOnce()).toBe(0);
    clock.advance(1);
    expect(await worker.runOnce()).toBe(1);
    expect(await deliveries(t.db, start)).toEqual({
      [ep.id]: { state: 'pending', attempts: 2, dueIn: 5_000 + 7_000 },
    });

    status = 200;
    clock.advance(7_000);
    expect(await worker.runOnce()).toBe(1);
    await sender.close();
    expect(await deliveries(t.db, start)).toEqual({
      [ep.id]: { state: 'delivered', attempts: 3, dueIn: null },
    });
    expect(receiver.requests).toHaveLength(3);
  });

  it('retries a 400 at an endpoint in lenient mode, and dead-letters it at its strict sibling', async () => {
    const { clock, worker, sender } = virtualWorker(t.db, {
      policy: { backoff: { kind: 'schedule', scheduleMs: [60_000], jitter: 'none' } },
    });
    const app = await makeApp(t.db, clock.now());
    const lenient = await makeEndpoint(t.db, app.id, clock.now(), {
      url: receiver.url,
      retryPolicy: { classifier: { mode: 'lenient' } },
    });
    const strict = await makeEndpoint(t.db, app.id, clock.now(), { url: receiver.url });
    await publishJson(t.db, app.id, clock.now(), {});
    const start = clock.now();
    status = 400;

    expect(await worker.runOnce()).toBe(2);
    expect(await deliveries(t.db, start)).toEqual({
      [lenient.id]: { state: 'pending', attempts: 1, dueIn: 60_000 },
      [strict.id]: { state: 'failed', attempts: 1, dueIn: null },
    });

    // The receiver got over whatever made it refuse: the retried one arrives.
    status = 200;
    clock.advance(60_000);
    expect(await worker.runOnce()).toBe(1);
    await sender.close();
    expect(await deliveries(t.db, start)).toMatchObject({
      [lenient.id]: { state: 'delivered', attempts: 2 },
      [strict.id]: { state: 'failed', attempts: 1 },
    });
  });

  it("takes the endpoint's value where both layers set a field, and the application's elsewhere", async () => {
    const { clock, worker, sender } = virtualWorker(t.db);
    const app = await makeApp(t.db, clock.now(), {
      classifier: { mode: 'lenient' },
      backoff: schedule(5_000),
      giveUp: { maxAttempts: 2 },
    });
    const inherits = await makeEndpoint(t.db, app.id, clock.now(), { url: receiver.url });
    const strict = await makeEndpoint(t.db, app.id, clock.now(), {
      url: receiver.url,
      retryPolicy: { classifier: { mode: 'strict' } },
    });
    const slower = await makeEndpoint(t.db, app.id, clock.now(), {
      url: receiver.url,
      retryPolicy: { backoff: schedule(20_000) },
    });
    await publishJson(t.db, app.id, clock.now(), {});
    const start = clock.now();
    status = 400;

    expect(await worker.runOnce()).toBe(3);
    // The application's lenient mode retries the 400, except where the endpoint says strict; its
    // schedule applies, except where the endpoint has its own.
    expect(await deliveries(t.db, start)).toEqual({
      [inherits.id]: { state: 'pending', attempts: 1, dueIn: 5_000 },
      [strict.id]: { state: 'failed', attempts: 1, dueIn: null },
      [slower.id]: { state: 'pending', attempts: 1, dueIn: 20_000 },
    });

    clock.advance(5_000);
    expect(await worker.runOnce()).toBe(1);
    clock.advance(15_000);
    expect(await worker.runOnce()).toBe(1);
    await sender.close();
    // The application's two-attempt limit still binds the endpoint that set only its backoff.
    expect(await deliveries(t.db, start)).toEqual({
      [inherits.id]: { state: 'expired', attempts: 2, dueIn: null },
      [strict.id]: { state: 'failed', attempts: 1, dueIn: null },
      [slower.id]: { state: 'expired', attempts: 2, dueIn: null },
    });
  });
});
