/**
 * An endpoint whose every attempt fails for days is disabled, as Svix does (COURIER_DISABLE_FAILING_AFTER):
 * 5xx answers, which never make a streak of permanent failures, included.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CompletionWriter } from '../../src/dispatch/completion-writer.ts';
import { ensureOperatorEndpoint } from '../../src/dispatch/operator-webhook.ts';
import { silentLogger } from '../../src/logger.ts';
import type { Queryable } from '../../src/store/db.ts';
import { resumeEndpoint } from '../../src/store/queries/endpoint-status.ts';
import { getEndpointById } from '../../src/store/repos/endpoints.ts';
import { type Receiver, startReceiver } from '../delivery/receiver.ts';
import { BACKENDS, openTestDatabase, type TestDatabase } from '../support/databases.ts';
import { virtualWorker } from '../support/engine.ts';
import { makeApp, makeEndpoint, publishJson } from '../support/fixtures.ts';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;

describe.each(BACKENDS)('disabling an endpoint failing for days on %s', (backend) => {
  let t: TestDatabase;
  let receiver: Receiver;
  /** The receiver's answer to every request. */
  let status: number;

  beforeEach(async () => {
    t = await openTestDatabase(backend);
    status = 503;
    receiver = await startReceiver((_req, res) => {
      res.writeHead(status);
      res.end();
    });
  });
  afterEach(async () => {
    await receiver.close();
    await t.drop();
  });

  async function setUp(disableFailingAfterMs?: number | null, appId?: string) {
    const engine = virtualWorker(t.db, { disableFailingAfterMs });
    const app = appId ?? (await makeApp(t.db, engine.clock.now())).id;
    const ep = await makeEndpoint(t.db, app, engine.clock.now(), { url: receiver.url, maxInFlight: 1 });
    const endpoint = async () => (await getEndpointById(t.db, ep.id))!;
    /** A message, then one attempt: the receiver sees a request an hour. */
    const hourly = async (hours: number) => {
      for (let h = 0; h < hours; h++) {
        await publishJson(t.db, app, engine.clock.now(), { h });
        expect(await engine.worker.runOnce()).toBeGreaterThan(0);
        engine.clock.advance(HOUR);
      }
    };
    const events = async () =>
      (
        await t.db.query<{ type: string; data: Record<string, unknown> }>(
          "select type, data from courier_operational_events where endpoint_id = $1 and type like 'endpoint.%' order by id",
          [ep.id],
        )
      ).rows;
    return { ...engine, app, ep, endpoint, hourly, events };
  }

  it('disables it at the first failure 5 days after its first, holding its deliveries and storing no new ones', async () => {
    const { clock, sender, worker, app, ep, endpoint, hourly, events } = await setUp();
    const first = clock.now();
    await hourly(5 * 24);
    expect(await endpoint()).toMatchObject({ status: 'enabled', failingSince: first, failureStreak: 0 });
    expect(await events()).toEqual([]);

    await hourly(1);
    const failSince = new Date(first).toISOString();
    const reason = `disabled after every attempt failed since ${failSince}`;
    expect(await endpoint()).toMatchObject({ status: 'disabled', statusReason: reason });
    expect(await events()).toEqual([
      {
        type: 'endpoint.disabled',
        data: expect.objectContaining({
          endpointId: ep.id,
          appId: app,
          failSince,
          trigger: 'automatic',
          reason,
        }),
      },
    ]);
    const states = await t.db.query<{ state: string }>(
      "select distinct state from courier_deliveries where endpoint_id = $1 and state not in ('expired', 'failed')",
      [ep.id],
    );
    expect(states.rows).toEqual([{ state: 'held' }]);
    const before = receiver.requests.length;
    const count = async () =>
      (await t.db.query('select 1 from courier_deliveries where endpoint_id = $1', [ep.id])).rows.length;
    const stored = await count();
    await publishJson(t.db, app, clock.now(), { after: true });
    expect(await count()).toBe(stored);
    clock.advance(DAY);
    expect(await worker.runOnce()).toBe(0);
    expect(receiver.requests.length).toBe(before);
    await sender.close();

    // Its owner enables it again: a new run, should it fail again.
    await t.db.transaction((tx) => resumeEndpoint(tx, ep.id, clock.now(), 1_000, 0));
    expect(await endpoint()).toMatchObject({ status: 'enabled', failingSince: null });
  });

  it('starts the count again after a success, or after a day without a failure', async () => {
    const { clock, sender, endpoint, hourly } = await setUp();
    await hourly(4 * 24);
    status = 200;
    await hourly(1);
    expect((await endpoint()).failingSince).toBeNull();
    status = 500;
    const restart = clock.now();
    await hourly(4 * 24);
    // Quiet for a day and a second (the pending retries too: one due then).
    await t.db.query(`delete from courier_deliveries`);
    clock.advance(DAY + 1_000);
    const again = clock.now();
    await hourly(3 * 24);
    expect(await endpoint()).toMatchObject({ status: 'enabled', failingSince: again });
    expect(again - restart).toBeGreaterThan(5 * DAY);
    await sender.close();
  });

  it('never disables it when turned off', async () => {
    const { sender, endpoint, hourly } = await setUp(null);
    await hourly(7 * 24);
    expect((await endpoint()).status).toBe('enabled');
    await sender.close();
  });

  it("leaves the operator webhook's own endpoint enabled: no notice could say so", async () => {
    const { clock } = virtualWorker(t.db);
    const { appId } = await ensureOperatorEndpoint(t.db, receiver.url, clock);
    const { sender, endpoint, hourly } = await setUp(2 * DAY, appId);
    await hourly(3 * 24);
    expect((await endpoint()).status).toBe('enabled');
    await sender.close();
  });

  it("looks at a run it found not to stand once, not under the endpoint's locks at every batch", async () => {
    const { clock } = virtualWorker(t.db);
    const { appId } = await ensureOperatorEndpoint(t.db, receiver.url, clock);
    const { ep } = await setUp(DAY, appId);
    let transactions = 0;
    const counted = new Proxy(t.db, {
      get: (db, key) =>
        key === 'transaction'
          ? (work: (tx: Queryable) => Promise<unknown>) => {
              transactions++;
              return db.transaction(work);
            }
          : Reflect.get(db, key, db),
    });
    const writer = new CompletionWriter(counted, 'w', clock, silentLogger, 100, undefined, DAY);
    const run = { endpointId: ep.id, failingSince: clock.now() - 2 * DAY };
    for (let i = 0; i < 3; i++) await writer.settle({ alarms: [], failing: [run] });
    expect(transactions).toBe(1);
    await writer.settle({ alarms: [], failing: [{ ...run, failingSince: run.failingSince + 1 }] });
    expect(transactions).toBe(2);
  });
});
