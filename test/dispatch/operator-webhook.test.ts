import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.ts';
import { EXHAUSTED } from '../../src/dispatch/attempt-events.ts';
import { pauseForStreak } from '../../src/dispatch/auto-pause.ts';
import {
  ensureOperatorEndpoint,
  hasOperatorEndpoint,
  OperatorRelay,
} from '../../src/dispatch/operator-webhook.ts';
import { newId } from '../../src/ids.ts';
import { type Logger, silentLogger } from '../../src/logger.ts';
import type { Database } from '../../src/store/db.ts';
import { heldCount, holdEndpoint } from '../../src/store/queries/endpoint-status.ts';
import { lockUnrelayed, recordOperationalEvents } from '../../src/store/queries/operational-events.ts';
import { deleteApplication } from '../../src/store/repos/applications.ts';
import { deleteEndpoint, getEndpointById } from '../../src/store/repos/endpoints.ts';
import { BACKENDS, openTestDatabase, type TestDatabase } from '../support/databases.ts';
import { makeApp, makeEndpoint } from '../support/fixtures.ts';
import { holdOpen } from '../support/transactions.ts';

describe.each(BACKENDS)('the operator webhook on %s', (backend) => {
  let t: TestDatabase;
  const clock = new ManualClock(Date.UTC(2026, 0, 1, 12));
  let operatorAppId: string;
  let endpointId: string;

  beforeEach(async () => {
    t = await openTestDatabase(backend);
    ({ appId: operatorAppId } = await ensureOperatorEndpoint(t.db, 'https://ops.example.com/courier', clock));
    const app = await makeApp(t.db, clock.now());
    endpointId = (await makeEndpoint(t.db, app.id, clock.now(), { url: 'https://example.com/dead' })).id;
    // The streaks the alarms below report.
    await t.db.query('update courier_endpoint_queues set failure_streak = 100');
  });
  afterEach(async () => {
    await t.drop();
  });

  const state = async () => {
    const count = async (sql: string, params: unknown[] = []) =>
      (await t.db.query<{ n: number }>(sql, params)).rows[0]!.n;
    return {
      status: (
        await t.db.query<{ status: string }>('select status from courier_endpoints where id = $1', [
          endpointId,
        ])
      ).rows[0]!.status,
      events: await count('select count(*)::int as n from courier_operational_events'),
      queued: await count(
        `select count(*)::int as n from courier_messages m join courier_deliveries d on d.message_id = m.id
          where m.app_id = $1 and m.event_type = 'endpoint.paused'`,
        [operatorAppId],
      ),
    };
  };
  const alarm = () => ({ endpointId, failureStreak: 100 });
  const relay = (logger: Logger = silentLogger, db: Database = t.db) => new OperatorRelay(db, clock, logger);

  it('records endpoint.paused with the pause, and the relay queues it for the operator once', async () => {
    const event = await pauseForStreak(t.db, alarm(), clock, true);
    expect(event?.type).toBe('endpoint.paused');
    // The data every endpoint event has (Svix's), then the streak's.
    const { rows: app } = await t.db.query<{ id: string; uid: string }>(
      'select a.id, a.uid from courier_applications a join courier_endpoints e on e.app_id = a.id where e.id = $1',
      [endpointId],
    );
    expect(event?.data).toEqual({
      appId: app[0]!.id,
      appUid: app[0]!.uid,
      endpointId,
      endpointUid: null,
      url: 'https://example.com/dead',
      failureStreak: 100,
      trigger: 'automatic',
      reason: 'paused after 100 consecutive permanent failures',
    });
    expect(await state()).toEqual({ status: 'paused', events: 1, queued: 0 });
    expect(await relay().run()).toBe(1);
    expect(await state()).toEqual({ status: 'paused', events: 1, queued: 1 });
    const { rows } = await t.db.query<{ event_id: string }>(
      'select event_id from courier_messages where app_id = $1',
      [operatorAppId],
    );
    expect(rows).toEqual([{ event_id: event!.id }]);
    expect(await relay().run()).toBe(0);
    expect((await state()).queued).toBe(1);
  });

  it('pauses only while the streak stands: not after a success, a new URL or a resume reset it, nor once deleted', async () => {
    await t.db.query('update courier_endpoint_queues set failure_streak = 0 where endpoint_id = $1', [
      endpointId,
    ]);
    expect(await pauseForStreak(t.db, alarm(), clock, true)).toBeNull();
    await t.db.query('update courier_endpoint_queues set failure_streak = 101 where endpoint_id = $1', [
      endpointId,
    ]);
    await t.db.transaction((tx) => deleteEndpoint(tx, endpointId, clock.now()));
    expect(await pauseForStreak(t.db, alarm(), clock, true)).toBeNull();
    expect(await state()).toMatchObject({ status: 'enabled', events: 0 });
  });

  it('leaves alone an event recorded without a relay to send it', async () => {
    await pauseForStreak(t.db, alarm(), clock, false);
    expect(await relay().run()).toBe(0);
    expect(await state()).toEqual({ status: 'paused', events: 1, queued: 0 });
  });

  it('passes by the events when there is no operator application: nobody is to receive them', async () => {
    await t.db.transaction((tx) => deleteApplication(tx, operatorAppId, clock.now()));
    await pauseForStreak(t.db, alarm(), clock, true);
    expect(await relay().run()).toBe(1);
    const { rows } = await t.db.query('select 1 from courier_messages');
    expect(rows).toEqual([]);
    // Passed by for good: an operational endpoint made later receives what happens after it.
    expect(await relay().run()).toBe(0);
  });

  it('stores no message for an event no operator endpoint takes: filtered out, disabled, or wanting channels', async () => {
    const narrow = async (set: string) =>
      t.db.query(`update courier_endpoints set ${set} where app_id = $1`, [operatorAppId]);
    const queuedAfterPause = async () => {
      const event = { id: newId('opev', clock.now()), type: 'endpoint.paused', appId: 'app_other' };
      const recorded = { ...event, endpointId: null, data: {}, createdAt: clock.now() };
      await t.db.transaction((tx) => recordOperationalEvents(tx, [recorded], true));
      expect(await relay().run()).toBe(1);
      const stored = 'select count(*)::int as n from courier_messages where app_id = $1';
      return (await t.db.query<{ n: number }>(stored, [operatorAppId])).rows[0]!.n;
    };
    await narrow(`event_types = '{endpoint.disabled}'`);
    expect(await queuedAfterPause()).toBe(0);
    await narrow(`event_types = null, status = 'disabled'`);
    expect(await queuedAfterPause()).toBe(0);
    await narrow(`status = 'enabled', channels = '{ops}'`);
    expect(await queuedAfterPause()).toBe(0);
    await narrow(`channels = null, event_types = '{endpoint.paused}'`);
    expect(await queuedAfterPause()).toBe(1);
  });

  it("tells whether COURIER_OPERATOR_WEBHOOK_URL's endpoint still receives events", async () => {
    expect(await hasOperatorEndpoint(t.db)).toBe(true);
    await t.db.query(`update courier_endpoints set status = 'disabled' where app_id = $1`, [operatorAppId]);
    expect(await hasOperatorEndpoint(t.db)).toBe(false);
    await t.db.query(`update courier_endpoints set status = 'enabled' where app_id = $1`, [operatorAppId]);
    await t.db.transaction((tx) => deleteApplication(tx, operatorAppId, clock.now()));
    expect(await hasOperatorEndpoint(t.db)).toBe(false);
  });

  it("records, but does not send to it, an event about the operator's own endpoint", async () => {
    const { rows } = await t.db.query<{ id: string }>('select id from courier_endpoints where app_id = $1', [
      operatorAppId,
    ]);
    const event = await pauseForStreak(t.db, { endpointId: rows[0]!.id, failureStreak: 100 }, clock, true);
    expect(event?.appId).toBe(operatorAppId);
    expect(await relay().run()).toBe(1);
    const queued = await t.db.query('select 1 from courier_messages where app_id = $1', [operatorAppId]);
    expect(queued.rows).toEqual([]);
    expect(await relay().run()).toBe(0);
  });

  it('logs a notice the operator webhook gave up on, rather than send it to that webhook again', async () => {
    const errors: string[] = [];
    const logger = { ...silentLogger, error: (_o: object, msg?: string) => void errors.push(msg ?? '') };
    const exhausted = (appId: string) => ({
      id: newId('opev', clock.now()),
      type: EXHAUSTED,
      appId,
      endpointId: null,
      data: { appId },
      createdAt: clock.now(),
    });
    await t.db.transaction((tx) =>
      recordOperationalEvents(tx, [exhausted(operatorAppId), exhausted('app_other')], true),
    );
    expect(await relay(logger).run()).toBe(2);
    expect(errors).toEqual(['the operator webhook did not take a notice; it is not sent again']);
    expect((await state()).queued).toBe(0);
  });

  it('resumes its own endpoint, paused by a streak, when a worker starts with another URL', async () => {
    const operatorEndpointId = (
      await t.db.query<{ id: string }>('select id from courier_endpoints where app_id = $1', [operatorAppId])
    ).rows[0]!.id;
    await pauseForStreak(t.db, alarm(), clock, true);
    await pauseForStreak(t.db, { endpointId: operatorEndpointId, failureStreak: 100 }, clock, true);
    expect(await relay().run()).toBe(2);
    expect(await heldCount(t.db, operatorEndpointId)).toBe(1);

    // The same URL: its receiver may still refuse the notices, which would then be dead letters.
    expect(await ensureOperatorEndpoint(t.db, 'https://ops.example.com/courier', clock)).toEqual({
      appId: operatorAppId,
      resumed: null,
      stillPaused: true,
    });
    expect(await heldCount(t.db, operatorEndpointId)).toBe(1);

    const again = await ensureOperatorEndpoint(t.db, 'https://ops.example.com/fixed', clock);
    expect(again).toEqual({ appId: operatorAppId, resumed: 1, stillPaused: false });
    expect(await getEndpointById(t.db, operatorEndpointId)).toMatchObject({
      status: 'enabled',
      url: 'https://ops.example.com/fixed',
      failureStreak: 0,
    });
    expect(await heldCount(t.db, operatorEndpointId)).toBe(0);
    // Only its own: a customer's endpoint paused stays paused until its owner resumes it.
    expect((await state()).status).toBe('paused');
  });

  it('leaves its own endpoint paused through the API paused, whatever the URL', async () => {
    const operatorEndpointId = (
      await t.db.query<{ id: string }>('select id from courier_endpoints where app_id = $1', [operatorAppId])
    ).rows[0]!.id;
    await t.db.transaction((tx) =>
      holdEndpoint(tx, operatorEndpointId, 'paused', 'paused through the API', clock.now()),
    );
    expect(await ensureOperatorEndpoint(t.db, 'https://ops.example.com/other', clock)).toEqual({
      appId: operatorAppId,
      resumed: null,
      stillPaused: true,
    });
    expect(await getEndpointById(t.db, operatorEndpointId)).toMatchObject({ status: 'paused' });
  });

  it('keeps an event it could not queue, logs, and sends it on a later run', async () => {
    const errors: string[] = [];
    const logger: Logger = {
      ...silentLogger,
      error: (_o: unknown, msg?: string) => void errors.push(msg ?? ''),
    };
    await pauseForStreak(t.db, alarm(), clock, true);
    const down = Object.assign(Object.create(t.db) as Database, {
      transaction: () => Promise.reject(new Error('connection refused')),
    });
    expect(await relay(logger, down).run()).toBe(0);
    expect(errors).toEqual(['could not queue operational events for the operator webhook; retrying later']);
    expect(await state()).toEqual({ status: 'paused', events: 1, queued: 0 });
    expect(await relay().run()).toBe(1);
    expect((await state()).queued).toBe(1);
  });

  it.skipIf(backend === 'pglite')('passes by the events another relay is sending', async () => {
    await pauseForStreak(t.db, alarm(), clock, true);
    const other = await holdOpen(t.db, (tx) => lockUnrelayed(tx, 100));
    expect(await relay().run()).toBe(0);
    await other.commit();
    expect(await relay().run()).toBe(1);
  });
});
