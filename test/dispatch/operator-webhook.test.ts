import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.ts';
import { pauseForStreak } from '../../src/dispatch/auto-pause.ts';
import { ensureOperatorEndpoint, operatorWebhookSink } from '../../src/dispatch/operator-webhook.ts';
import { type Logger, silentLogger } from '../../src/logger.ts';
import { BACKENDS, openTestDatabase, type TestDatabase } from '../support/databases.ts';
import { makeApp, makeEndpoint } from '../support/fixtures.ts';

describe.each(BACKENDS)('the operator webhook on %s', (backend) => {
  let t: TestDatabase;
  const clock = new ManualClock(Date.UTC(2026, 0, 1, 12));
  let operatorAppId: string;
  let endpointId: string;

  beforeEach(async () => {
    t = await openTestDatabase(backend);
    operatorAppId = await ensureOperatorEndpoint(t.db, 'https://ops.example.com/courier', clock);
    const app = await makeApp(t.db, clock.now());
    endpointId = (await makeEndpoint(t.db, app.id, clock.now(), { url: 'https://example.com/dead' })).id;
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

  it('queues endpoint.paused for the operator in the transaction that pauses the endpoint', async () => {
    const event = await pauseForStreak(
      t.db,
      alarm(),
      clock,
      operatorWebhookSink(operatorAppId, clock, silentLogger),
    );
    expect(event?.type).toBe('endpoint.paused');
    expect(await state()).toEqual({ status: 'paused', events: 1, queued: 1 });
    const { rows } = await t.db.query<{ event_id: string }>(
      'select event_id from courier_messages where app_id = $1',
      [operatorAppId],
    );
    expect(rows).toEqual([{ event_id: event!.id }]);
  });

  it("records, but does not send to it, an event about the operator's own endpoint", async () => {
    const { rows } = await t.db.query<{ id: string }>('select id from courier_endpoints where app_id = $1', [
      operatorAppId,
    ]);
    const sink = operatorWebhookSink(operatorAppId, clock, silentLogger);
    const event = await pauseForStreak(t.db, { endpointId: rows[0]!.id, failureStreak: 100 }, clock, sink);
    expect(event?.appId).toBe(operatorAppId);
    const queued = await t.db.query('select 1 from courier_messages where app_id = $1', [operatorAppId]);
    expect(queued.rows).toEqual([]);
    expect((await state()).events).toBe(1);
  });

  it('queues nothing when the pause does not commit, and pauses nothing', async () => {
    const sink = operatorWebhookSink(operatorAppId, clock, silentLogger);
    await expect(
      pauseForStreak(t.db, alarm(), clock, async (tx, events) => {
        await sink(tx, events);
        throw new Error('crashed before the commit');
      }),
    ).rejects.toThrow('crashed before the commit');
    expect(await state()).toEqual({ status: 'enabled', events: 0, queued: 0 });
  });

  it('still pauses, and logs, when the event cannot be queued', async () => {
    const errors: string[] = [];
    const logger: Logger = {
      ...silentLogger,
      error: (_o: unknown, msg?: string) => void errors.push(msg ?? ''),
    };
    // An operator application that is not there (its row removed behind Courier's back).
    await pauseForStreak(t.db, alarm(), clock, operatorWebhookSink('app_missing', clock, logger));
    expect(await state()).toEqual({ status: 'paused', events: 1, queued: 0 });
    expect(errors).toEqual(['could not queue the operational event for the operator webhook']);
  });
});
