import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/clock.ts';
import type { Database } from '../../src/store/db.ts';
import { openTestDatabase, type TestDatabase } from '../support/databases.ts';
import { makeApp, makeEndpoint, publishJson } from '../support/fixtures.ts';
import { ScriptedReceiver } from '../support/scripted-receiver.ts';
import { killStrayWorkers, spawnWorker, stopWorker } from '../support/worker-process.ts';

const ENV = {
  COURIER_REQUEST_TIMEOUT: '2s',
  COURIER_LEASE: '8s',
  COURIER_RETRY_BASE: '100ms',
  COURIER_RETRY_CAP: '1s',
};

async function count(db: Database, sql: string): Promise<number> {
  const { rows } = await db.query<{ n: number }>(sql);
  return rows[0]!.n;
}

async function until(check: () => Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

describe('worker crashes and shutdowns', () => {
  let t: TestDatabase;
  const receiver = new ScriptedReceiver();

  beforeAll(async () => {
    t = await openTestDatabase('pg');
    await receiver.start();
  });
  afterAll(async () => {
    await killStrayWorkers();
    await receiver.close();
    await t.drop();
  });

  it('kill -9 mid-flight: another worker takes over after the lease, nothing lost, no extra attempt', {
    timeout: 90_000,
  }, async () => {
    const now = systemClock.now();
    const app = await makeApp(t.db, now);
    // The victim's requests hang until the kill ends them (its cap of 5 in flight, no more); the
    // rescuer's succeed.
    let victimAlive = true;
    const url = receiver.script('crash', () => (victimAlive ? { hang: true } : { status: 200 }));
    await makeEndpoint(t.db, app.id, now, { url, maxInFlight: 5, eventTypes: ['crash'] });
    for (let i = 0; i < 20; i++)
      await publishJson(t.db, app.id, systemClock.now(), { i }, { eventType: 'crash' });

    // A request timeout the kill surely comes within, however loaded the machine.
    const victim = await spawnWorker(t.schema!, {
      ...ENV,
      COURIER_REQUEST_TIMEOUT: '10s',
      COURIER_LEASE: '16s',
    });
    await until(async () => receiver.seen.length >= 5, 20_000, 'requests in flight');
    victimAlive = false;
    victim.child.kill('SIGKILL');
    await victim.exited;
    const inFlightAtKill = receiver.seen.length;
    expect(
      await count(t.db, `select count(*)::int as n from courier_deliveries where lease_owner is not null`),
    ).toBe(5);

    const rescuer = await spawnWorker(t.schema!, ENV);
    await until(
      async () =>
        (await count(
          t.db,
          `select count(*)::int as n from courier_delivery_states where state = 'delivered'`,
        )) === 20,
      60_000,
      'all deliveries',
    );
    await stopWorker(rescuer);

    // Each delivery counted exactly one attempt; only the requests in flight at the kill were seen twice.
    expect(await count(t.db, 'select max(attempts)::int as n from courier_delivery_states')).toBe(1);
    expect(await count(t.db, 'select count(*)::int as n from courier_attempts')).toBe(20);
    expect(receiver.seen.length).toBe(20 + inFlightAtKill);
  });

  it.each([
    ['SIGTERM', ['SIGTERM']],
    // A terminal's Ctrl-C under npm start: the process group's and npm's forwarded copy.
    ['SIGINT twice, 5 ms apart', ['SIGINT', 'SIGINT']],
  ] as const)(
    '%s lets requests in flight finish and records them',
    { timeout: 60_000 },
    async (_, signals) => {
      const now = systemClock.now();
      const app = await makeApp(t.db, now);
      // Held open until the signals are sent: they reach the worker with all four in flight.
      let letGo!: () => void;
      const gate = new Promise<void>((resolve) => {
        letGo = resolve;
      });
      const url = receiver.script(`graceful${signals.length}`, () => ({ status: 200, after: gate }));
      await makeEndpoint(t.db, app.id, now, {
        url,
        maxInFlight: 4,
        eventTypes: [`graceful${signals.length}`],
      });
      for (let i = 0; i < 4; i++)
        await publishJson(t.db, app.id, systemClock.now(), { i }, { eventType: `graceful${signals.length}` });

      const seenBefore = receiver.seen.length;
      const worker = await spawnWorker(t.schema!, ENV);
      await until(async () => receiver.seen.length - seenBefore >= 4, 20_000, 'requests in flight');
      expect(
        await count(t.db, `select count(*)::int as n from courier_deliveries where lease_owner is not null`),
      ).toBe(4);
      worker.child.kill(signals[0]);
      for (const signal of signals.slice(1)) {
        await new Promise((resolve) => setTimeout(resolve, 5));
        worker.child.kill(signal);
      }
      // It waits for them: still running while they are held (a short look, only ever a pass when right).
      const early = await Promise.race([
        worker.exited.then(() => 'exited'),
        new Promise((resolve) => setTimeout(() => resolve('running'), 300)),
      ]);
      expect(early).toBe('running');
      letGo();
      expect(await worker.exited).toBe(0);
      const { rows } = await t.db.query<{ state: string; n: number }>(
        `select d.state, count(*)::int as n from courier_delivery_states d join courier_messages m on m.id = d.message_id
        where m.event_type = $1 group by d.state`,
        [`graceful${signals.length}`],
      );
      expect(rows).toEqual([{ state: 'delivered', n: 4 }]);
    },
  );
  it('SIGTERM waits out a request hanging to its deadline and records it, instead of sending it again', {
    timeout: 60_000,
  }, async () => {
    const now = systemClock.now();
    const app = await makeApp(t.db, now);
    const url = receiver.script('hanging', () => ({ hang: true }));
    await makeEndpoint(t.db, app.id, now, { url, eventTypes: ['hanging'] });
    const { messageId } = await publishJson(t.db, app.id, systemClock.now(), {}, { eventType: 'hanging' });

    const worker = await spawnWorker(t.schema!, ENV);
    await until(async () => receiver.requestsFor(messageId).length === 1, 20_000, 'the hanging request');
    expect(await stopWorker(worker, 'SIGTERM')).toBe(0);
    // The request timed out (2 s) before the worker exited, so it is one counted attempt, retried
    // later on the policy's schedule; not released and sent again while the first was still open.
    const { rows } = await t.db.query<{ state: string; attempts: number; failure_kind: string }>(
      `select d.state, d.attempts, a.failure_kind from courier_delivery_states d
         join courier_attempts a on a.delivery_id = d.id where d.message_id = $1`,
      [messageId],
    );
    expect(rows).toEqual([{ state: 'pending', attempts: 1, failure_kind: 'timeout' }]);
    expect(receiver.requestsFor(messageId)).toHaveLength(1);
  });
});
