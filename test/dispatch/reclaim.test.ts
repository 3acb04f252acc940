import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.ts';
import { WorkLostAtShutdown } from '../../src/dispatch/work-lost.ts';
import type { Worker } from '../../src/dispatch/worker.ts';
import { type Database, DatabaseUnavailableError, preparedName } from '../../src/store/db.ts';
import { reapExpiredLeases } from '../../src/store/queries/unclaim.ts';
import { type Receiver, startReceiver } from '../delivery/receiver.ts';
import { BACKENDS, openTestDatabase, type TestDatabase } from '../support/databases.ts';
import { runningWorker, virtualWorker } from '../support/engine.ts';
import { makeApp, makeEndpoint, publishJson } from '../support/fixtures.ts';
import { intercepting } from '../support/intercepting.ts';

/** Polls until done() holds, for at most 5 s. */
async function until(done: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + 5_000;
  while (!(await done()) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
}

/**
 * `db` with the answer to the first statement `lettingGo` matches held back until the worker's next
 * round has claimed and handled its claim's answer: answers on two connections can be read in
 * either order. `second` holds that round's count once it has begun. With `fails`, that statement
 * is not run and its answer is a lost connection; with `answerLost`, it runs (and commits) and its
 * answer is a lost connection.
 */
function answeredAfterNextClaim(
  db: Database,
  lettingGo: (sql: string) => boolean,
  hooks: { onClaim?: () => void; beforeRound?: () => unknown; fails?: boolean; answerLost?: boolean } = {},
) {
  const round: { worker?: Worker; second?: Promise<number> } = {};
  let claimed: (() => void) | null = null;
  let armed = true;
  const held = intercepting(db, async (sql, _params, run) => {
    const result = hooks.fails && armed && lettingGo(sql) ? null : await run();
    if (preparedName(sql) === 'courier_claim_batch') {
      hooks.onClaim?.();
      claimed?.();
    }
    if (armed && round.worker && lettingGo(sql)) {
      armed = false;
      await hooks.beforeRound?.();
      const claimReturned = new Promise<void>((resolve) => {
        claimed = resolve;
      });
      round.second = round.worker.runOnce();
      await claimReturned;
      await new Promise((resolve) => setImmediate(resolve)); // the claim's answer is handled first
      if (result === null || hooks.answerLost) {
        throw new DatabaseUnavailableError('database unavailable: Connection terminated');
      }
    }
    return result;
  });
  return { db: held, round };
}

describe.each(BACKENDS)('a worker claiming again, or unable to use, what it claimed, on %s', (backend) => {
  let t: TestDatabase;
  let receiver: Receiver;

  beforeEach(async () => {
    t = await openTestDatabase(backend);
    receiver = await startReceiver((_req, res) => res.end('ok'));
  });
  afterEach(async () => {
    await receiver.close();
    await t.drop();
  });

  it('sends nothing twice and records one attempt when its lease ran out while completions could not be written', async () => {
    let completionsFail = true;
    let reapsRun = true;
    let reaped = 0;
    let reaping = 0;
    let claimed = 0;
    /** The worker holds the delivery's lease: taken by a claim, lost to a reap. */
    let leaseHeld = false;
    const db = intercepting(t.db, async (sql, _params, run) => {
      if (completionsFail && preparedName(sql) === 'courier_complete_rows') {
        throw new DatabaseUnavailableError('database unavailable: Connection terminated unexpectedly');
      }
      if (sql.includes('courier_unclaim(null')) {
        if (!reapsRun) return { rows: [{ n: 0 }], rowCount: 1 };
        reaping++;
        try {
          const result = (await run()) as { rows: Array<{ n: number }> };
          const n = Number(result.rows[0]!.n);
          reaped += n;
          if (n > 0) leaseHeld = false;
          return result;
        } finally {
          reaping--;
        }
      }
      const result = (await run()) as { rows: Array<Record<string, unknown>> };
      if (preparedName(sql) === 'courier_claim_batch') {
        const n = result.rows.filter((r) => r.delivery_id !== null).length;
        claimed += n;
        if (n > 0) leaseHeld = true;
      }
      return result;
    });
    const { sender, worker } = runningWorker(db, { leaseMs: 300, reapIntervalMs: 100 });
    const app = await makeApp(t.db, Date.now());
    await makeEndpoint(t.db, app.id, Date.now(), { url: receiver.url });
    await worker.start();
    try {
      await publishJson(t.db, app.id, Date.now(), { n: 1 });
      // Sent, its completion failing to be written; its lease runs out, its own reaper takes it
      // back and its loop claims it again.
      await until(async () => reaped >= 1 && claimed >= 2 && leaseHeld && reaping === 0);
      expect([reaped >= 1, claimed >= 2, leaseHeld]).toEqual([true, true, true]);
      // The completion is written under the lease of that claim, which no reap may take first: one
      // landing between a reap and the next claim would find no lease of its owner and be dropped,
      // and the delivery sent again (at least once), a case this test is not about.
      reapsRun = false;
      completionsFail = false;
      const states = async () =>
        (await t.db.query<{ state: string }>('select state from courier_delivery_states')).rows;
      await until(async () => (await states())[0]?.state === 'delivered');
      expect(await states()).toEqual([{ state: 'delivered' }]);
    } finally {
      await worker.stop();
      await sender.close();
    }
    expect(receiver.requests).toHaveLength(1);
    const attempts = await t.db.query<{ n: number }>('select count(*)::int as n from courier_attempts');
    const queue = await t.db.query<{ in_flight: number }>('select in_flight from courier_endpoint_queues');
    expect([attempts.rows[0]!.n, queue.rows[0]!.in_flight]).toEqual([1, 0]);
  });

  it('keeps an outcome overtaken while it could not be written as history only: a replay is sent at once, not put off by it', async () => {
    let status = 503;
    const answering = await startReceiver((_req, res) => {
      res.writeHead(status);
      res.end();
    });
    let completionsFail = true;
    let reapsRun = true;
    let replayed = false;
    let claimed = 0;
    const db = intercepting(t.db, async (sql, _params, run) => {
      if (completionsFail && preparedName(sql) === 'courier_complete_rows') {
        throw new DatabaseUnavailableError('database unavailable: Connection terminated unexpectedly');
      }
      if (sql.includes('courier_unclaim(null')) {
        if (!reapsRun) return { rows: [{ n: 0 }], rowCount: 1 };
        if (!replayed) {
          // Its lease run out, this worker's 503 (a retry in a minute) still unwritten: what another
          // worker's attempt, dead-lettering it, and then a replay (the receiver fixed) leave, made
          // before the reap that takes it back, so that this worker's next claim sees it.
          const { rowCount } = await t.db.query(
            `update courier_deliveries set attempts = 0, trigger = 1, give_up_at = null
              where lease_expires_at < now()`,
          );
          if (rowCount) {
            status = 200;
            replayed = true;
          }
        }
        return run();
      }
      const result = (await run()) as { rows: Array<Record<string, unknown>> };
      if (preparedName(sql) === 'courier_claim_batch')
        claimed += result.rows.filter((r) => r.delivery_id !== null).length;
      return result;
    });
    const { sender, worker } = runningWorker(db, { leaseMs: 300, reapIntervalMs: 100 });
    const app = await makeApp(t.db, Date.now());
    await makeEndpoint(t.db, app.id, Date.now(), { url: answering.url });
    await worker.start();
    try {
      await publishJson(t.db, app.id, Date.now(), { n: 1 });
      await until(async () => replayed && claimed >= 2);
      reapsRun = false;
      completionsFail = false;
      const states = async () =>
        (await t.db.query<{ state: string }>('select state from courier_delivery_states')).rows;
      await until(async () => (await states())[0]?.state === 'delivered');
      expect(await states()).toEqual([{ state: 'delivered' }]);
    } finally {
      await worker.stop();
      await sender.close();
      await answering.close();
    }
    expect(answering.requests).toHaveLength(2);
    const { rows } = await t.db.query<{ status_code: number; decision: string }>(
      'select status_code, decision from courier_attempts order by started_at',
    );
    expect(rows).toEqual([
      { status_code: 503, decision: 'retry' },
      { status_code: 200, decision: 'delivered' },
    ]);
  });

  it('says so when it stops without writing what it sent: the database down throughout the shutdown', async () => {
    let down = false;
    const db = intercepting(t.db, async (sql, _params, run) => {
      if (down && preparedName(sql) === 'courier_complete_rows') {
        throw new DatabaseUnavailableError('database unavailable: Connection terminated unexpectedly');
      }
      return run();
    });
    // Completions wait (a long linger) so that the database goes down before they are written.
    const { sender, worker } = runningWorker(db, { completionLingerMs: 60_000 });
    const app = await makeApp(t.db, Date.now());
    await makeEndpoint(t.db, app.id, Date.now(), { url: receiver.url });
    await worker.start();
    await publishJson(t.db, app.id, Date.now(), { n: 1 });
    await until(async () => receiver.requests.length === 1);
    down = true;
    const stopped = await worker.stop().then(
      () => null,
      (error: unknown) => error,
    );
    await sender.close();
    expect(stopped).toBeInstanceOf(WorkLostAtShutdown);
    expect((stopped as WorkLostAtShutdown).lost).toBe(1);
    // Left leased: it is sent again once its lease runs out, as the error says.
    const leased = await t.db.query('select 1 from courier_deliveries where lease_owner is not null');
    expect(leased.rows).toHaveLength(1);
  });

  it('gives back at once, uncounted, what a claim whose endpoints cannot be read returned, not leave it leased with the endpoint at its cap', async () => {
    let configFails = true;
    const db = intercepting(t.db, async (sql, _params, run) => {
      if (configFails && sql.includes('courier_endpoint_configs')) {
        configFails = false;
        throw new DatabaseUnavailableError('database unavailable: Connection terminated unexpectedly');
      }
      return run();
    });
    const { worker, clock, sender } = virtualWorker(db);
    const app = await makeApp(t.db, clock.now());
    await makeEndpoint(t.db, app.id, clock.now(), { url: receiver.url, maxInFlight: 3 });
    for (let i = 0; i < 3; i++) await publishJson(t.db, app.id, clock.now(), { i });
    await expect(worker.runOnce()).rejects.toThrow(/could not read their endpoints' configuration/);
    const { rows } = await t.db.query<{
      state: string;
      attempts: number;
      leased: boolean;
      in_flight: number;
    }>(
      `select d.state, d.attempts, d.lease_expires_at is not null as leased, q.in_flight
       from courier_deliveries d join courier_endpoint_queues q using (endpoint_id)`,
    );
    expect(rows).toEqual(Array(3).fill({ state: 'pending', attempts: 0, leased: false, in_flight: 0 }));
    expect(await worker.runOnce()).toBe(3); // no lease to wait out
    await sender.close();
    expect(receiver.requests).toHaveLength(3);
  });

  it('sends a delivery given back and claimed again before its release was heard, not leave it leased until its lease runs out', async () => {
    const clock = new ManualClock(Date.UTC(2026, 0, 1, 12));
    let stall = 600; // the first claim is late: its delivery is given back
    const { db, round } = answeredAfterNextClaim(t.db, (sql) => sql.includes('courier_release('), {
      onClaim: () => {
        clock.advance(stall);
        stall = 0;
      },
    });
    const { worker, sender } = virtualWorker(db, { clock });
    round.worker = worker;
    const app = await makeApp(t.db, clock.now());
    await makeEndpoint(t.db, app.id, clock.now(), { url: receiver.url });
    await publishJson(t.db, app.id, clock.now(), { n: 1 });
    expect(await worker.runOnce()).toBe(1);
    expect(worker.lateReleases).toBe(1);
    expect(await round.second).toBe(1); // the same delivery, claimed again
    while (receiver.requests.length === 0 && (await worker.runOnce()) > 0) {}
    await sender.close();
    expect(receiver.requests).toHaveLength(1);
    const { rows } = await t.db.query<{ n: number }>(
      'select count(*)::int as n from courier_deliveries where lease_owner is not null',
    );
    expect(rows[0]!.n).toBe(0);
  });

  it('writes an outcome whose write failed under the claim that took its delivery back, before giving that claim back', async () => {
    const clock = new ManualClock(Date.UTC(2026, 0, 1, 12));
    // The write fails once its delivery's lease has run out and the worker has claimed it again.
    const { db, round } = answeredAfterNextClaim(t.db, (sql) => sql.includes('courier_complete_rows'), {
      fails: true,
      beforeRound: () => reapExpiredLeases(t.db, clock.now() + 61_000),
    });
    const { worker, sender } = virtualWorker(db, { clock });
    round.worker = worker;
    const app = await makeApp(t.db, clock.now());
    await makeEndpoint(t.db, app.id, clock.now(), { url: receiver.url });
    await publishJson(t.db, app.id, clock.now(), { n: 1 });
    expect(await worker.runOnce()).toBe(1);
    expect(await round.second).toBe(1); // the same delivery, claimed again and not sent
    while ((await worker.runOnce()) > 0) {}
    await sender.close();
    expect(receiver.requests).toHaveLength(1);
    const { rows } = await t.db.query<{ attempts: number; deliveries: number }>(
      `select (select count(*)::int from courier_attempts) as attempts,
              (select count(*)::int from courier_deliveries) as deliveries`,
    );
    expect(rows[0]).toEqual({ attempts: 1, deliveries: 0 });
  });

  it.each([
    ['heard', false],
    ['unheard (written again, without a second attempt)', true],
  ])(
    'sends a delivery completed as due at once and claimed again before its completion was heard, its commit %s',
    async (_, answerLost) => {
      const clock = new ManualClock(Date.UTC(2026, 0, 1, 12));
      let failures = 1;
      const flaky = await startReceiver((_req, res) => {
        res.statusCode = failures-- > 0 ? 500 : 200;
        res.end();
      });
      const { db, round } = answeredAfterNextClaim(t.db, (sql) => sql.includes('courier_complete_rows'), {
        answerLost,
        beforeRound: () => clock.advance(10), // the retry falls due
      });
      // A retry due 1 ms after the failure.
      const { worker, sender } = virtualWorker(db, { clock, policy: { backoff: { scheduleMs: [1] } } });
      round.worker = worker;
      const app = await makeApp(t.db, clock.now());
      await makeEndpoint(t.db, app.id, clock.now(), { url: flaky.url });
      await publishJson(t.db, app.id, clock.now(), { n: 1 });
      expect(await worker.runOnce()).toBe(1);
      expect(await round.second).toBe(1); // the same delivery, claimed again
      while (flaky.requests.length < 2 && (await worker.runOnce()) > 0) {}
      await sender.close();
      await flaky.close();
      expect(flaky.requests).toHaveLength(2);
      const { rows } = await t.db.query<{ decisions: string[]; leased: number }>(
        `select array(select decision from courier_attempts order by id) as decisions,
              (select count(*)::int from courier_deliveries where lease_owner is not null) as leased`,
      );
      expect(rows[0]).toEqual({ decisions: ['retry', 'delivered'], leased: 0 });
    },
  );
});
