import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.ts';
import { nextLimit, RetentionSweeper } from '../../src/dispatch/retention.ts';
import { newId } from '../../src/ids.ts';
import { claim } from '../../src/store/queries/claim.ts';
import { holdEndpoint } from '../../src/store/queries/endpoint-status.ts';
import { recordOperationalEvents } from '../../src/store/queries/operational-events.ts';
import { resendDelivery } from '../../src/store/queries/resend.ts';
import { reapExpiredLeases, release } from '../../src/store/queries/unclaim.ts';
import { recordBackgroundTask } from '../../src/store/repos/background-tasks.ts';
import { deleteEndpoint } from '../../src/store/repos/endpoints.ts';
import { type Receiver, startReceiver } from '../delivery/receiver.ts';
import { BACKENDS, openTestDatabase, type TestDatabase } from '../support/databases.ts';
import { virtualWorker } from '../support/engine.ts';
import { makeApp, makeEndpoint, publishJson } from '../support/fixtures.ts';
import { blockedBy, holdOpen } from '../support/transactions.ts';

const DAY = 86_400_000;
const RETENTION = 10 * DAY;
// Ids never sort before earlier ones (ids.ts), so each test starts later than the last one ended.
let clock = new ManualClock(Date.UTC(2026, 0, 1, 12));

describe.each(BACKENDS)('retention on %s', (backend) => {
  let t: TestDatabase;
  let receiver: Receiver;

  beforeAll(async () => {
    t = await openTestDatabase(backend);
    // /ok answers 200, /gone 410 (permanent: dead-lettered), /flaky 500 (a retry stays pending).
    receiver = await startReceiver((req, res) => {
      res.writeHead(req.url === '/gone' ? 410 : req.url === '/flaky' ? 500 : 200);
      res.end();
    });
  });
  afterAll(async () => {
    await receiver.close();
    await t.drop();
  });
  beforeEach(async () => {
    clock = new ManualClock(clock.now() + DAY);
    await t.db.query(
      'truncate courier_attempts, courier_deliveries, courier_messages, courier_endpoint_queues, courier_endpoint_secrets, courier_endpoints, courier_applications, courier_operational_events, courier_background_tasks cascade',
    );
  });

  /** An application with one endpoint at `path` on the receiver. */
  const appWith = async (path: string) => {
    const app = await makeApp(t.db, clock.now());
    const ep = await makeEndpoint(t.db, app.id, clock.now(), { url: `${receiver.url}${path}` });
    return { appId: app.id, endpointId: ep.id };
  };
  const publishTo = async (appId: string) =>
    (await publishJson(t.db, appId, clock.now(), { n: 1 })).messageId;
  const count = async (table: string, messageId: string) =>
    (
      await t.db.query<{ n: number }>(`select count(*)::int as n from ${table} where message_id = $1`, [
        messageId,
      ])
    ).rows[0]!.n;
  const states = async (messageId: string) =>
    (
      await t.db.query<{ state: string }>('select state from courier_deliveries where message_id = $1', [
        messageId,
      ])
    ).rows.map((r) => r.state);
  const messageExists = async (id: string) =>
    (await t.db.query('select 1 from courier_messages where id = $1', [id])).rows.length === 1;

  /** Runs a worker on virtual time until nothing is due now. */
  const deliverAll = async () => {
    const policy = { giveUp: { windowMs: 400 * DAY, maxAttempts: 100 } };
    const { worker, sender } = virtualWorker(t.db, { clock, policy });
    while ((await worker.runOnce()) > 0) {}
    await sender.close();
  };

  it('sizes each statement by the rows per message it deleted: a wide fan-out means fewer messages', async () => {
    const app = await makeApp(t.db, clock.now());
    for (let i = 0; i < 10; i++) {
      const ep = await makeEndpoint(t.db, app.id, clock.now(), { url: `${receiver.url}/ok` });
      await holdEndpoint(t.db, ep.id, 'paused', 'test', clock.now());
    }
    // 120 messages of 10 held deliveries each (held deliveries do not keep a message).
    for (let i = 0; i < 120; i++) await publishTo(app.id);
    clock.advance(RETENTION + 1);
    // One statement a sweep, a budget of 45 rows: the first looks at 100 messages (the fan-out
    // unknown) and stops at the fifth (40 rows before it); the next ones at 4 (45 rows at 10 a message).
    const sweeper = new RetentionSweeper(t.db, RETENTION, 1000, 1, 45);
    expect(await sweeper.sweep(clock.now())).toEqual({
      messages: 5,
      operationalEvents: 0,
      backgroundTasks: 0,
    });
    expect(await sweeper.sweep(clock.now())).toEqual({
      messages: 4,
      operationalEvents: 0,
      backgroundTasks: 0,
    });
    expect(await sweeper.sweep(clock.now())).toEqual({
      messages: 4,
      operationalEvents: 0,
      backgroundTasks: 0,
    });
    const { rows } = await t.db.query<{ n: number }>('select count(*)::int as n from courier_deliveries');
    expect(rows[0]!.n).toBe((120 - 13) * 10);
  });

  it('stops a statement within the row budget where the fan-out grew since the last one', async () => {
    const narrow = await makeApp(t.db, clock.now());
    const wide = await makeApp(t.db, clock.now());
    const endpoint = async (appId: string) => {
      const ep = await makeEndpoint(t.db, appId, clock.now(), { url: `${receiver.url}/ok` });
      await holdEndpoint(t.db, ep.id, 'paused', 'test', clock.now());
    };
    await endpoint(narrow.id);
    for (let i = 0; i < 10; i++) await endpoint(wide.id);
    // 30 messages of one held delivery, then 30 of ten.
    for (let i = 0; i < 30; i++) await publishTo(narrow.id);
    for (let i = 0; i < 30; i++) await publishTo(wide.id);
    clock.advance(RETENTION + 1);
    // One statement a sweep, 25 rows: the first looks at 100 messages but stops at the 25th
    // narrow one; the next looks at 25 (a row each), stopping after the 5 narrow ones left and 2
    // wide ones (5 + 10 + 10 rows); the next at 7 (25 rows at 3.6 a message), stopping after 3
    // wide ones; then 2 a statement (25 rows at 10 a message).
    const sweeper = new RetentionSweeper(t.db, RETENTION, 1000, 1, 25);
    const sweeps: number[] = [];
    for (let i = 0; i < 4; i++) sweeps.push((await sweeper.sweep(clock.now())).messages);
    expect(sweeps).toEqual([25, 7, 3, 2]);
    const { rows } = await t.db.query<{ n: number }>('select count(*)::int as n from courier_messages');
    expect(rows[0]!.n).toBe(60 - 37);
  });

  it('deletes old messages with their attempts, dead letters and held deliveries, and keeps those in flight or retrying', async () => {
    const ok = await appWith('/ok');
    const gone = await appWith('/gone');
    const flaky = await appWith('/flaky');
    const paused = await appWith('/ok');
    const leased = await appWith('/ok');
    await holdEndpoint(t.db, paused.endpointId, 'paused', 'test', clock.now());

    const delivered = await publishTo(ok.appId);
    const deadLettered = await publishTo(gone.appId);
    const retrying = await publishTo(flaky.appId);
    const held = await publishTo(paused.appId);
    await deliverAll();
    const inFlight = await publishTo(leased.appId);
    const claimed = await claim(t.db, {
      owner: 'elsewhere',
      now: clock.now(),
      leaseMs: 20 * DAY,
      limit: 10,
    });
    expect(claimed.deliveries.map((d) => d.messageId)).toEqual([inFlight]);
    await recordOperationalEvents(
      t.db,
      [
        {
          id: newId('opev', clock.now()),
          type: 'endpoint.paused',
          appId: ok.appId,
          endpointId: ok.endpointId,
          data: {},
          createdAt: clock.now(),
        },
      ],
      false,
    );
    await recordBackgroundTask(t.db, {
      id: newId('qtask', clock.now()),
      task: 'endpoint.recover',
      status: 'finished',
      data: { replayed: 0 },
      updatedAt: clock.now(),
    });

    clock.advance(RETENTION);
    const recent = await publishTo(ok.appId);
    await deliverAll(); // the retry fails again: still pending
    const sweeper = new RetentionSweeper(t.db, RETENTION);
    // Exactly as old as the period is not older.
    expect(await sweeper.sweep(clock.now())).toEqual({
      messages: 0,
      operationalEvents: 0,
      backgroundTasks: 0,
    });

    clock.advance(1);
    expect(await count('courier_attempts', deadLettered)).toBe(1);
    expect(await count('courier_deliveries', deadLettered)).toBe(1);
    expect(await count('courier_deliveries', held)).toBe(1);
    // The events: the one recorded above, and the dead letter's message.attempt.exhausted.
    expect(await sweeper.sweep(clock.now())).toEqual({
      messages: 3,
      operationalEvents: 2,
      backgroundTasks: 1,
    });

    // Held for a paused endpoint is not kept for ever: resumed, it gets the retention period's messages.
    for (const id of [delivered, deadLettered, held]) {
      expect(await messageExists(id)).toBe(false);
      expect(await count('courier_attempts', id)).toBe(0);
      expect(await count('courier_deliveries', id)).toBe(0);
    }
    // Deliveries in flight or retrying keep their message and its history, however old.
    for (const id of [retrying, inFlight, recent]) expect(await messageExists(id)).toBe(true);
    expect(await count('courier_attempts', retrying)).toBe(2);
    expect(await count('courier_attempts', recent)).toBe(1);
    expect(await sweeper.sweep(clock.now())).toEqual({
      messages: 0,
      operationalEvents: 0,
      backgroundTasks: 0,
    });
  });

  it('looks at a bounded number of messages per sweep and goes on from there, past ones that must stay', async () => {
    const flaky = await appWith('/flaky');
    const ok = await appWith('/ok');
    const retrying = await publishTo(flaky.appId);
    const delivered: string[] = [];
    for (let i = 0; i < 4; i++) {
      clock.advance(1);
      delivered.push(await publishTo(ok.appId));
    }
    await deliverAll();
    clock.advance(RETENTION + 1);

    // Two messages looked at per statement, one statement per sweep.
    const sweeper = new RetentionSweeper(t.db, RETENTION, 2, 1);
    expect((await sweeper.sweep(clock.now())).messages).toBe(1); // retrying (stays), delivered[0]
    expect(await messageExists(delivered[1]!)).toBe(true);
    expect((await sweeper.sweep(clock.now())).messages).toBe(2); // delivered[1], delivered[2]
    expect((await sweeper.sweep(clock.now())).messages).toBe(1); // delivered[3]: the end, from the start next
    expect((await sweeper.sweep(clock.now())).messages).toBe(0); // retrying alone
    expect(await messageExists(retrying)).toBe(true);
    for (const id of delivered) expect(await messageExists(id)).toBe(false);
  });

  it('runs in a worker’s housekeeping', async () => {
    const ok = await appWith('/ok');
    const old = await publishTo(ok.appId);
    await deliverAll();
    clock.advance(RETENTION + 1);
    const { worker, sender } = virtualWorker(t.db, { clock, retentionMs: RETENTION, reapIntervalMs: 20 });
    await worker.start();
    try {
      const deadline = Date.now() + 5_000;
      while ((await messageExists(old)) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
      expect(await messageExists(old)).toBe(false);
    } finally {
      await worker.stop();
      await sender.close();
    }
  });

  it('answers a resend of a message deleted since it was looked up as gone, not a foreign key error', async () => {
    const ok = await appWith('/ok');
    const old = await publishTo(ok.appId);
    await deliverAll();
    clock.advance(RETENTION + 1);
    expect((await new RetentionSweeper(t.db, RETENTION).sweep(clock.now())).messages).toBe(1);
    const outcome = await t.db.transaction((tx) =>
      resendDelivery(tx, { messageId: old, endpointId: ok.endpointId, now: clock.now() }),
    );
    expect(outcome).toBe('message_gone');
    expect(await count('courier_deliveries', old)).toBe(0);
  });

  it('deletes the deliveries a deleted endpoint left unfinished, which nothing would ever send', async () => {
    // A request in flight when its endpoint is deleted, answered 500: the retry is stored as held.
    let deleteMe = '';
    const deletingReceiver = await startReceiver(async (_req, res) => {
      await t.db.transaction((tx) => deleteEndpoint(tx, deleteMe, clock.now()));
      res.writeHead(500);
      res.end();
    });
    try {
      const app = await makeApp(t.db, clock.now());
      deleteMe = (await makeEndpoint(t.db, app.id, clock.now(), { url: `${deletingReceiver.url}/` })).id;
      const heldForGood = await publishTo(app.id);
      await deliverAll();
      expect(await states(heldForGood)).toEqual(['held']);

      // Claimed by a worker that then crashed; the endpoint deleted; the lease taken back: held too.
      const crashed = await appWith('/ok');
      const reapedForGood = await publishTo(crashed.appId);
      await claim(t.db, { owner: 'crashed', now: clock.now(), leaseMs: 60_000, limit: 10 });
      await t.db.transaction((tx) => deleteEndpoint(tx, crashed.endpointId, clock.now()));
      clock.advance(60_001);
      expect(await reapExpiredLeases(t.db, clock.now())).toBe(1);
      expect(await states(reapedForGood)).toEqual(['held']);

      clock.advance(RETENTION);
      expect((await new RetentionSweeper(t.db, RETENTION).sweep(clock.now())).messages).toBe(2);
      for (const id of [heldForGood, reapedForGood]) {
        expect(await messageExists(id)).toBe(false);
        expect(await count('courier_deliveries', id)).toBe(0);
      }
    } finally {
      await deletingReceiver.close();
    }
  });

  it('looks only at message ids: a row an outbox caller gave another id is not aged by it', async () => {
    const ok = await appWith('/ok');
    await t.db.query(
      `insert into courier_messages (id, app_id, event_type, payload, created_at)
       values ('a-custom-id', $1, 'x', '\\x7b7d', $2)`,
      [ok.appId, new Date(clock.now())],
    );
    clock.advance(RETENTION + 1);
    expect((await new RetentionSweeper(t.db, RETENTION).sweep(clock.now())).messages).toBe(0);
    expect(await messageExists('a-custom-id')).toBe(true);
  });

  it('keeps a dead letter visible for a day after it appeared, however old its message', async () => {
    const flaky = await appWith('/flaky');
    const old = await publishTo(flaky.appId);
    await deliverAll();
    clock.advance(RETENTION + DAY);
    // A retry window of the endpoint's own, longer than the retention period, ran out an hour ago.
    await t.db.query(
      `update courier_deliveries set state = 'expired', updated_at = $2 where message_id = $1`,
      [old, new Date(clock.now() - 3_600_000)],
    );
    const sweeper = new RetentionSweeper(t.db, RETENTION);
    expect((await sweeper.sweep(clock.now())).messages).toBe(0);
    clock.advance(DAY - 3_600_000 + 1);
    expect((await sweeper.sweep(clock.now())).messages).toBe(1);
    expect(await messageExists(old)).toBe(false);
  });

  it('keeps a message whose delivery is leased, even on a deleted endpoint; not one given back while paused', async () => {
    const deleted = await appWith('/ok');
    const leasedOnDeleted = await publishTo(deleted.appId);
    await claim(t.db, { owner: 'busy', now: clock.now(), leaseMs: 20 * DAY, limit: 10 });
    await t.db.transaction((tx) => deleteEndpoint(tx, deleted.endpointId, clock.now()));

    // Claimed, the endpoint paused meanwhile (the pause skips a leased delivery), then given back: held.
    const paused = await appWith('/ok');
    const givenBack = await publishTo(paused.appId);
    const claimed = await claim(t.db, { owner: 'worker', now: clock.now(), leaseMs: 60_000, limit: 10 });
    await holdEndpoint(t.db, paused.endpointId, 'paused', 'test', clock.now());
    await release(t.db, 'worker', claimed.deliveries, clock.now());
    expect(await states(givenBack)).toEqual(['held']);

    clock.advance(RETENTION + 1);
    expect((await new RetentionSweeper(t.db, RETENTION).sweep(clock.now())).messages).toBe(1);
    expect(await messageExists(leasedOnDeleted)).toBe(true);
    expect(await messageExists(givenBack)).toBe(false);
  });

  describe.skipIf(backend === 'pglite')('beside other transactions (two connections)', () => {
    it('never waits for a row lock: a message whose delivery another transaction holds stays, the rest go', async () => {
      const busy = await appWith('/gone');
      const idle = await appWith('/gone');
      const held = await publishTo(busy.appId);
      const free = await publishTo(idle.appId);
      await deliverAll();
      clock.advance(RETENTION + 1);

      // A replay (or an endpoint deletion, an operator's psql) holds one dead letter's row.
      const replay = await holdOpen(t.db, (tx) =>
        tx.query(`update courier_deliveries set state = 'pending', attempts = 0 where message_id = $1`, [
          held,
        ]),
      );
      expect(await new RetentionSweeper(t.db, RETENTION).sweep(clock.now())).toEqual({
        messages: 1,
        operationalEvents: 2, // the two dead letters' message.attempt.exhausted
        backgroundTasks: 0,
      });
      await replay.commit();
      expect(await messageExists(free)).toBe(false);
      expect(await messageExists(held)).toBe(true);
      expect(await count('courier_attempts', held)).toBe(1);
      expect(await states(held)).toEqual(['pending']);
      expect((await new RetentionSweeper(t.db, RETENTION).sweep(clock.now())).messages).toBe(0);
    });

    it('answers a resend waiting on a message being deleted as gone, not a foreign key error', async () => {
      const ok = await appWith('/ok');
      const old = await publishTo(ok.appId);
      await deliverAll();
      const deletion = await holdOpen(t.db, async (tx) => {
        await tx.query('delete from courier_attempts where message_id = $1', [old]);
        await tx.query('delete from courier_messages where id = $1', [old]);
      });
      const resend = t.db.transaction((tx) =>
        resendDelivery(tx, { messageId: old, endpointId: ok.endpointId, now: clock.now() }),
      );
      await blockedBy(t.db, deletion.pid);
      await deletion.commit();
      expect(await resend).toBe('message_gone');
    });

    it('passes by a message a resend holds, which then keeps it with its new delivery', async () => {
      const ok = await appWith('/ok');
      const old = await publishTo(ok.appId);
      await deliverAll();
      clock.advance(RETENTION + 1);

      const resend = await holdOpen(t.db, (tx) =>
        resendDelivery(tx, { messageId: old, endpointId: ok.endpointId, now: clock.now() }),
      );
      expect((await new RetentionSweeper(t.db, RETENTION).sweep(clock.now())).messages).toBe(0);
      await resend.commit();
      expect(await states(old)).toEqual(['pending']);
      expect((await new RetentionSweeper(t.db, RETENTION).sweep(clock.now())).messages).toBe(0);
      expect(await messageExists(old)).toBe(true);
    });
  });
});

describe('nextLimit (messages for the next retention statement)', () => {
  it('holds the row budget at the rows per message just deleted, within 1 and the batch', () => {
    expect(nextLimit(100, { purged: 100, rowsDeleted: 200 }, 20_000, 1000)).toBe(1000);
    expect(nextLimit(1000, { purged: 50, rowsDeleted: 50_000 }, 20_000, 1000)).toBe(20);
    expect(nextLimit(20, { purged: 1, rowsDeleted: 1_000_000 }, 20_000, 1000)).toBe(1);
  });

  it('doubles when nothing was deleted to judge by', () => {
    expect(nextLimit(100, { purged: 0, rowsDeleted: 0 }, 20_000, 1000)).toBe(200);
    expect(nextLimit(800, { purged: 0, rowsDeleted: 0 }, 20_000, 1000)).toBe(1000);
  });
});
