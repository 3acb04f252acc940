import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { EXHAUSTED } from '../../src/dispatch/attempt-events.ts';
import { silentLogger } from '../../src/logger.ts';
import type { Database } from '../../src/store/db.ts';
import { listDeadLetters, replayDeadLetters } from '../../src/store/queries/dead-letter.ts';
import { heldCount, holdEndpoint, resumeEndpoint } from '../../src/store/queries/endpoint-status.ts';
import { listOperationalEvents } from '../../src/store/queries/operational-events.ts';
import { resendDelivery } from '../../src/store/queries/resend.ts';
import { getEndpointById, updateEndpoint } from '../../src/store/repos/endpoints.ts';
import { type Receiver, startReceiver } from '../delivery/receiver.ts';
import { BACKENDS, openTestDatabase, type TestDatabase } from '../support/databases.ts';
import { virtualWorker } from '../support/engine.ts';
import { makeApp, makeEndpoint, publishJson } from '../support/fixtures.ts';

async function states(db: Database): Promise<Record<string, number>> {
  const { rows } = await db.query<{ state: string; n: number }>(
    'select state, count(*)::int as n from courier_delivery_states group by state',
  );
  return Object.fromEntries(rows.map((r) => [r.state, r.n]));
}

describe.each(BACKENDS)('delivery lifecycle on %s', (backend) => {
  let t: TestDatabase;
  let receiver: Receiver;
  let status: number;
  let headers: Record<string, string>;

  beforeEach(async () => {
    t = await openTestDatabase(backend);
    status = 200;
    headers = {};
    receiver = await startReceiver((_req, res) => {
      res.writeHead(status, headers);
      res.end();
    });
  });
  afterEach(async () => {
    await receiver.close();
    await t.drop();
  });

  it('expires by attempt count, then replays from the dead letter with a fresh budget and the same bytes', async () => {
    const { clock, worker, sender } = virtualWorker(t.db, { policy: { giveUp: { maxAttempts: 3 } } });
    const app = await makeApp(t.db, clock.now());
    const ep = await makeEndpoint(t.db, app.id, clock.now(), { url: receiver.url });
    const { messageId } = await publishJson(t.db, app.id, clock.now(), { order: 7 });
    status = 503;
    for (let i = 0; i < 3; i++) {
      expect(await worker.runOnce()).toBe(1);
      clock.advance(3_600_000);
    }
    expect(await worker.runOnce()).toBe(0);
    expect(await states(t.db)).toEqual({ expired: 1 });
    const dead = await listDeadLetters(t.db, { endpointId: ep.id, limit: 10, now: clock.now() });
    expect(dead).toMatchObject([{ messageId, state: 'expired', attempts: 3 }]);

    status = 200;
    expect((await replayDeadLetters(t.db, { endpointId: ep.id }, clock.now())).replayed).toBe(1);
    expect(await worker.runOnce()).toBe(1);
    await sender.close();
    expect(await states(t.db)).toEqual({ delivered: 1 });
    expect(receiver.requests).toHaveLength(4);
    expect(new Set(receiver.requests.map((r) => r.body.toString()))).toEqual(new Set(['{"order":7}']));
    expect(new Set(receiver.requests.map((r) => r.headers['webhook-id']))).toEqual(new Set([messageId]));
    const { rows } = await t.db.query<{ number: number; trigger: number }>(
      'select number, trigger from courier_attempts order by id',
    );
    expect(rows.at(-1)).toEqual({ number: 1, trigger: 1 });
  });

  it('logs the attempt a resend asked for as manual, and the retries after it as scheduled', async () => {
    const { clock, worker, sender } = virtualWorker(t.db, {
      policy: { backoff: { kind: 'schedule', scheduleMs: [60_000], jitter: 'none' } },
    });
    const app = await makeApp(t.db, clock.now());
    const ep = await makeEndpoint(t.db, app.id, clock.now(), { url: receiver.url });
    const { messageId } = await publishJson(t.db, app.id, clock.now(), { n: 1 });
    status = 503;
    expect(await worker.runOnce()).toBe(1);
    await t.db.transaction((tx) => resendDelivery(tx, { messageId, endpointId: ep.id, now: clock.now() }));
    expect(await worker.runOnce()).toBe(1);
    clock.advance(60_000);
    expect(await worker.runOnce()).toBe(1);
    await sender.close();
    const { rows } = await t.db.query<{ number: number; trigger: number }>(
      'select number, trigger from courier_attempts order by id',
    );
    expect(rows).toEqual([
      { number: 1, trigger: 0 },
      { number: 2, trigger: 1 },
      { number: 3, trigger: 0 },
    ]);
  });

  it('keeps the time a delivery was held out of its retry window, though resent while held', async () => {
    const { clock, worker, sender } = virtualWorker(t.db);
    const app = await makeApp(t.db, clock.now());
    const ep = await makeEndpoint(t.db, app.id, clock.now(), { url: receiver.url });
    const { messageId } = await publishJson(t.db, app.id, clock.now(), { n: 1 });
    status = 503;
    expect(await worker.runOnce()).toBe(1);
    await sender.close();
    const giveUpAt = async () =>
      (
        await t.db.query<{ at: Date }>(
          'select give_up_at as at from courier_deliveries where endpoint_id = $1',
          [ep.id],
        )
      ).rows[0]!.at.getTime();
    const before = await giveUpAt();
    await t.db.transaction((tx) => holdEndpoint(tx, ep.id, 'paused', null, clock.now()));
    clock.advance(80 * 3_600_000);
    expect(
      await t.db.transaction((tx) => resendDelivery(tx, { messageId, endpointId: ep.id, now: clock.now() })),
    ).toBe('held');
    clock.advance(3_600_000);
    await t.db.transaction((tx) => resumeEndpoint(tx, ep.id, clock.now(), 0, 1));
    expect(await giveUpAt()).toBe(before + 81 * 3_600_000);
  });

  it('expires by time even when attempts remain', async () => {
    const { clock, worker, sender } = virtualWorker(t.db, {
      policy: {
        giveUp: { windowMs: 10 * 60_000 },
        backoff: { kind: 'schedule', scheduleMs: [4 * 60_000], jitter: 'none' },
      },
    });
    const app = await makeApp(t.db, clock.now());
    await makeEndpoint(t.db, app.id, clock.now(), { url: receiver.url });
    await publishJson(t.db, app.id, clock.now(), {});
    status = 500;
    const at: number[] = [];
    for (let i = 0; i < 6; i++) {
      if ((await worker.runOnce()) > 0) at.push(clock.now());
      clock.advance(4 * 60_000);
    }
    await sender.close();
    // Attempts at 0, 4 and 8 minutes; the next would land after the 10-minute window, so the
    // last one is clamped to the deadline and then the delivery expires.
    expect(at.map((ms) => (ms - at[0]!) / 60_000)).toEqual([0, 4, 8, 12]);
    expect(await states(t.db)).toEqual({ expired: 1 });
    const { rows } = await t.db.query<{ decision: string; reason: string | null }>(
      'select decision, reason from courier_attempts order by id',
    );
    expect(rows.at(-1)).toEqual({ decision: 'expired', reason: 'deadline' });
  });

  it('pauses an endpoint after a streak of permanent failures, holds its deliveries, and resumes them spread out', async () => {
    const warnings: { obj: object; msg?: string }[] = [];
    const logger = { ...silentLogger, warn: (obj: object, msg?: string) => void warnings.push({ obj, msg }) };
    const { clock, worker, sender } = virtualWorker(t.db, { pauseAfter: 5, logger });
    const app = await makeApp(t.db, clock.now());
    const ep = await makeEndpoint(t.db, app.id, clock.now(), { url: receiver.url, maxInFlight: 1 });
    for (let i = 0; i < 12; i++) await publishJson(t.db, app.id, clock.now(), { i });
    status = 410;
    while ((await worker.runOnce()) > 0) clock.advance(1);

    expect(await states(t.db)).toEqual({ failed: 5, held: 7 });
    expect(receiver.requests).toHaveLength(5);
    expect(await getEndpointById(t.db, ep.id)).toMatchObject({ status: 'paused', failureStreak: 5 });
    // Each dead letter announced as it was written, then the pause.
    const events = await listOperationalEvents(t.db, { limit: 10 });
    expect(events.map((e) => e.type)).toEqual([...Array(5).fill(EXHAUSTED), 'endpoint.paused']);
    expect(events[0]).toMatchObject({
      type: EXHAUSTED,
      appId: app.id,
      endpointId: ep.id,
      data: { lastAttempt: { responseStatusCode: 410 }, state: 'failed', attempts: 1 },
    });
    expect(events.at(-1)).toMatchObject({ endpointId: ep.id, data: { failureStreak: 5 } });
    // Said in the log too: without an operator webhook, that is where an operator sees it.
    expect(warnings).toEqual([
      {
        obj: { appId: app.id, endpointId: ep.id },
        msg: 'endpoint paused after 5 consecutive permanent failures; its deliveries are held until it is resumed',
      },
    ]);

    // New messages while paused are held too, not lost.
    await publishJson(t.db, app.id, clock.now(), { late: true });
    expect(await heldCount(t.db, ep.id)).toBe(8);
    clock.advance(3_600_000);
    expect(await worker.runOnce()).toBe(0);

    status = 200;
    expect(await resumeEndpoint(t.db, ep.id, clock.now(), 60_000, 7)).toBe(8);
    const { rows } = await t.db.query<{ at: Date }>(
      `select next_attempt_at as at from courier_deliveries where state = 'pending' order by 1`,
    );
    const offsets = rows.map((r) => r.at.getTime() - clock.now());
    expect(Math.min(...offsets)).toBeGreaterThanOrEqual(0);
    expect(Math.max(...offsets)).toBeLessThanOrEqual(60_000);
    expect(new Set(offsets).size).toBeGreaterThan(4); // spread, not one wave

    clock.advance(60_000);
    while ((await worker.runOnce()) > 0) clock.advance(1);
    await sender.close();
    expect(await states(t.db)).toEqual({ failed: 5, delivered: 8 });
    expect(await getEndpointById(t.db, ep.id)).toMatchObject({ status: 'enabled', failureStreak: 0 });
  });

  it('gives a held delivery back the time it waited held: resumed past its window, it is retried, not expired', async () => {
    const { clock, worker, sender } = virtualWorker(t.db, {
      policy: { backoff: { baseMs: 60_000, jitter: 'none' }, giveUp: { windowMs: 3_600_000 } },
    });
    const app = await makeApp(t.db, clock.now());
    const ep = await makeEndpoint(t.db, app.id, clock.now(), { url: receiver.url });
    await publishJson(t.db, app.id, clock.now(), { n: 1 });
    status = 503;
    expect(await worker.runOnce()).toBe(1);
    const giveUpAt = async () =>
      (
        await t.db.query<{ at: Date }>('select give_up_at as at from courier_deliveries')
      ).rows[0]!.at.getTime();
    const window = await giveUpAt();
    expect(window).toBe(clock.now() + 3_600_000);

    // Paused (by its owner, say) ten minutes into its one-hour window, resumed ten days later.
    clock.advance(600_000);
    await t.db.transaction((tx) => holdEndpoint(tx, ep.id, 'disabled', null, clock.now()));
    clock.advance(10 * 86_400_000);
    await t.db.transaction((tx) => resumeEndpoint(tx, ep.id, clock.now(), 0, 1));
    expect(await giveUpAt()).toBe(window + 10 * 86_400_000);

    // The receiver still warming up: the 503 is retried within the fifty minutes left.
    expect(await worker.runOnce()).toBe(1);
    expect(await states(t.db)).toEqual({ pending: 1 });
    status = 200;
    clock.advance(120_000);
    expect(await worker.runOnce()).toBe(1);
    await sender.close();
    expect(await states(t.db)).toEqual({ delivered: 1 });
  });

  it('a 404 counts toward the streak but is retried; a success resets the streak', async () => {
    const { clock, worker, sender } = virtualWorker(t.db);
    const app = await makeApp(t.db, clock.now());
    const ep = await makeEndpoint(t.db, app.id, clock.now(), { url: receiver.url });
    await publishJson(t.db, app.id, clock.now(), {});
    await publishJson(t.db, app.id, clock.now(), {});
    status = 404;
    await worker.runOnce();
    expect(await getEndpointById(t.db, ep.id)).toMatchObject({ failureStreak: 2 });
    expect(await states(t.db)).toEqual({ pending: 2 });
    status = 200;
    clock.advance(3_600_000);
    await worker.runOnce();
    await sender.close();
    expect(await getEndpointById(t.db, ep.id)).toMatchObject({ failureStreak: 0 });
  });

  it("a Retry-After holds the endpoint's other deliveries until then, not another endpoint's", async () => {
    const { clock, worker, sender } = virtualWorker(t.db);
    const other = await startReceiver((_req, res) => res.end());
    const start = clock.now();
    const app = await makeApp(t.db, start);
    const ep = await makeEndpoint(t.db, app.id, start, { url: receiver.url, maxInFlight: 1 });
    const otherApp = await makeApp(t.db, start);
    await makeEndpoint(t.db, otherApp.id, start, { url: other.url });
    for (let i = 0; i < 3; i++) await publishJson(t.db, app.id, start, { i });
    status = 429;
    headers = { 'retry-after': '120' };
    expect(await worker.runOnce()).toBe(1);
    expect(await getEndpointById(t.db, ep.id)).toMatchObject({ retryAfterUntil: start + 120_000 });
    status = 200;
    headers = {};
    // The other application's endpoint is not held.
    await publishJson(t.db, otherApp.id, start, {});
    expect(await worker.runOnce()).toBe(1);
    expect(other.requests).toHaveLength(1);
    clock.advance(119_999);
    expect(await worker.runOnce()).toBe(0);
    expect(receiver.requests).toHaveLength(1);
    clock.advance(1);
    // One at a time (maxInFlight 1): the two that never got an answer, then the turned-away one,
    // whose own retry was jittered later.
    expect(await worker.runOnce()).toBe(1);
    expect(await worker.runOnce()).toBe(1);
    clock.advance(12_000);
    expect(await worker.runOnce()).toBe(1);
    await sender.close();
    await other.close();
    expect(await states(t.db)).toEqual({ delivered: 4 });
    expect(receiver.requests.map((r) => JSON.parse(r.body.toString()).i).sort()).toEqual([0, 0, 1, 2]);
  });

  it("a pause and resume by the endpoint's owner lifts the wait its receiver asked for", async () => {
    const { clock, worker, sender } = virtualWorker(t.db);
    const app = await makeApp(t.db, clock.now());
    const ep = await makeEndpoint(t.db, app.id, clock.now(), { url: receiver.url, maxInFlight: 1 });
    await publishJson(t.db, app.id, clock.now(), { n: 1 });
    await publishJson(t.db, app.id, clock.now(), { n: 2 });
    status = 503;
    headers = { 'retry-after': '86400' };
    expect(await worker.runOnce()).toBe(1);
    status = 200;
    expect(await worker.runOnce()).toBe(0);
    await holdEndpoint(t.db, ep.id, 'disabled', null, clock.now());
    await resumeEndpoint(t.db, ep.id, clock.now(), 0, 1);
    expect(await getEndpointById(t.db, ep.id)).toMatchObject({ status: 'enabled', retryAfterUntil: null });
    expect(await worker.runOnce()).toBe(1);
    await sender.close();
    expect(receiver.requests.map((r) => r.body.toString())).toEqual(['{"n":1}', '{"n":2}']);
  });

  it("a new URL clears the old receiver's failure streak and the wait it asked for", async () => {
    const { clock, worker, sender } = virtualWorker(t.db);
    const moved = await startReceiver((_req, res) => res.end());
    const app = await makeApp(t.db, clock.now());
    const ep = await makeEndpoint(t.db, app.id, clock.now(), { url: receiver.url, maxInFlight: 1 });
    await publishJson(t.db, app.id, clock.now(), { n: 1 });
    await publishJson(t.db, app.id, clock.now(), { n: 2 });
    status = 404;
    expect(await worker.runOnce()).toBe(1);
    status = 429;
    headers = { 'retry-after': '3600' };
    expect(await worker.runOnce()).toBe(1);
    const held = await getEndpointById(t.db, ep.id);
    expect(held).toMatchObject({ failureStreak: 1, retryAfterUntil: clock.now() + 3_600_000 });
    // Settings other than the URL leave both as they are.
    await updateEndpoint(t.db, ep.id, { ...held!, description: 'renamed' }, clock.now());
    expect(await getEndpointById(t.db, ep.id)).toMatchObject({
      failureStreak: 1,
      retryAfterUntil: held!.retryAfterUntil,
    });
    await updateEndpoint(t.db, ep.id, { ...held!, url: moved.url }, clock.now());
    expect(await getEndpointById(t.db, ep.id)).toMatchObject({ failureStreak: 0, retryAfterUntil: null });
    // The 404's retry (a minute's backoff at most) goes to the new receiver; the 429's keeps its own hour.
    clock.advance(60_000);
    expect(await worker.runOnce()).toBe(1);
    await sender.close();
    await moved.close();
    expect(moved.requests.map((r) => r.body.toString())).toEqual(['{"n":1}']);
  });

  it("does not count the worker's own failure as an attempt", async () => {
    const { clock, worker, sender } = virtualWorker(t.db);
    const app = await makeApp(t.db, clock.now());
    const ep = await makeEndpoint(t.db, app.id, clock.now(), { url: receiver.url });
    await publishJson(t.db, app.id, clock.now(), {});
    const before = await t.db.query('select attempts, next_attempt_at from courier_deliveries');
    // A secret that cannot be parsed makes signing throw inside the worker, before any request.
    await t.db.query(`update courier_endpoint_secrets set key = 'not-a-secret' where endpoint_id = $1`, [
      ep.id,
    ]);
    expect(await worker.runOnce()).toBe(1);
    const after = await t.db.query('select attempts, next_attempt_at, state from courier_deliveries');
    expect(after.rows[0]).toMatchObject({ ...before.rows[0], state: 'pending' });
    expect(receiver.requests).toHaveLength(0);
    const { rows } = await t.db.query<{ n: number }>('select count(*)::int as n from courier_attempts');
    expect(rows[0]!.n).toBe(0);
    await sender.close();
  });

  it('gives a delivery it failed on twice in a row back due later, not in a hot loop', async () => {
    const errors: string[] = [];
    const logger = { ...silentLogger, error: (_o: object, msg?: string) => void errors.push(msg ?? '') };
    const { clock, worker, sender } = virtualWorker(t.db, { logger });
    const app = await makeApp(t.db, clock.now());
    const ep = await makeEndpoint(t.db, app.id, clock.now(), { url: receiver.url });
    await publishJson(t.db, app.id, clock.now(), {});
    await t.db.query(`update courier_endpoint_secrets set key = 'not-a-secret' where endpoint_id = $1`, [
      ep.id,
    ]);
    const row = async () =>
      (
        await t.db.query<{ lease_owner: string | null; attempts: number; due_in: number }>(
          `select lease_owner, attempts,
                  (extract(epoch from next_attempt_at) * 1000)::float8 - $1 as due_in
             from courier_deliveries`,
          [clock.now()],
        )
      ).rows[0];
    expect(await worker.runOnce()).toBe(1);
    expect(await row()).toEqual({ lease_owner: null, attempts: 0, due_in: 0 }); // given back: due at once
    expect(await worker.runOnce()).toBe(1);
    expect(await row()).toEqual({ lease_owner: null, attempts: 0, due_in: 60_000 }); // due in a minute
    expect(errors).toEqual([
      'worker failed on a delivery; giving it back',
      'worker failed on this delivery again; giving it back due in 60 s',
    ]);
    expect(await worker.runOnce()).toBe(0);
    clock.advance(60_000);
    expect(await worker.runOnce()).toBe(1);
    expect(await row()).toEqual({ lease_owner: null, attempts: 0, due_in: 120_000 }); // then two
    expect(receiver.requests).toHaveLength(0);
    expect(worker.inFlight).toBe(0);
    await sender.close();
  });

  it('still sends the rest of a claim when signing one of its deliveries fails', async () => {
    const { clock, worker, sender } = virtualWorker(t.db);
    const app = await makeApp(t.db, clock.now());
    const good = await makeEndpoint(t.db, app.id, clock.now(), { url: `${receiver.url}/good` });
    const bad = await makeEndpoint(t.db, app.id, clock.now(), { url: `${receiver.url}/bad` });
    await publishJson(t.db, app.id, clock.now(), {});
    await t.db.query(`update courier_endpoint_secrets set key = 'not-a-secret' where endpoint_id = $1`, [
      bad.id,
    ]);
    expect(await worker.runOnce()).toBe(2);
    expect(receiver.requests.map((r) => r.url)).toEqual(['/good']);
    const { rows } = await t.db.query<{ endpoint_id: string; state: string; attempts: number }>(
      'select endpoint_id, state, attempts from courier_delivery_states order by endpoint_id',
    );
    expect(rows).toEqual(
      expect.arrayContaining([
        { endpoint_id: good.id, state: 'delivered', attempts: 1 },
        { endpoint_id: bad.id, state: 'pending', attempts: 0 },
      ]),
    );
    await sender.close();
  });
});
