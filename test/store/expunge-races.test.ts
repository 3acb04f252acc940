import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.ts';
import { PayloadExpirySweeper } from '../../src/dispatch/payload-expiry.ts';
import type { Database, Queryable, Transaction } from '../../src/store/db.ts';
import { claim } from '../../src/store/queries/claim.ts';
import { complete } from '../../src/store/queries/complete.ts';
import { replayDeadLetters } from '../../src/store/queries/dead-letter.ts';
import { expireDuePayload, expungePayload } from '../../src/store/queries/expunge.ts';
import { resendDelivery } from '../../src/store/queries/resend.ts';
import { reapExpiredLeases } from '../../src/store/queries/unclaim.ts';
import { openTestDatabase, type TestDatabase } from '../support/databases.ts';
import { emptyTables, makeApp, makeEndpoint, publishJson, retryCompletion } from '../support/fixtures.ts';
import { blockedBy, blockedUntilCommit, holdOpen, notBlockedBy } from '../support/transactions.ts';

describe('expunge under concurrency (pg)', () => {
  let t: TestDatabase;
  let clock: ManualClock;
  let appId: string;
  let endpointId: string;
  beforeAll(async () => {
    t = await openTestDatabase('pg');
  });
  afterAll(async () => {
    await t.drop();
  });
  beforeEach(async () => {
    clock = new ManualClock(Date.UTC(2026, 0, 1, 12));
    await t.db.query('drop trigger if exists pause_hook on courier_deliveries');
    await emptyTables(t.db);
    appId = (await makeApp(t.db, clock.now())).id;
    endpointId = (await makeEndpoint(t.db, appId, clock.now(), { url: 'http://127.0.0.1:9/' })).id;
  });
  const deliveryOf = async (messageId: string) =>
    (
      await t.db.query<{ id: number; state: string; leased: boolean }>(
        'select id, state, lease_owner is not null as leased from courier_deliveries where message_id = $1',
        [messageId],
      )
    ).rows[0]!;
  const publishOne = async () => {
    const r = await publishJson(t.db, appId, clock.now(), { secret: 1 });
    clock.advance(1);
    return r.messageId;
  };

  /** A message whose payload's retention runs out in a second. */
  const expiring = async () => {
    const m = await publishOne();
    const expiry = new Date(clock.now() + 1_000);
    await t.db.query('insert into courier_payload_expiries (message_id, expires_at) values ($1, $2)', [
      m,
      expiry,
    ]);
    return { m, expiry };
  };

  const sentNow = async () =>
    (await claim(t.db, { owner: 'w', now: clock.now() + 1, leaseMs: 60_000, limit: 10 })).deliveries.map(
      (d) => [d.messageId, d.payload.length],
    );

  it('a replay waits for an expunge under way, then passes its dead letter by', async () => {
    const [m1, m2] = [await publishOne(), await publishOne()];
    await t.db.query(`update courier_deliveries set state = 'failed'`);
    const expunge = await holdOpen(t.db, (tx) => expungePayload(tx, { messageId: m1, now: clock.now() }));
    const replay = await blockedUntilCommit(t.db, expunge, () =>
      replayDeadLetters(t.db, { endpointId }, clock.now()),
    );
    expect(replay.replayed).toBe(1);
    // Never m1's delivery with an empty payload (the worker would send b'').
    expect(await sentNow()).toEqual([[m2, 12]]);
    expect(await deliveryOf(m1)).toMatchObject({ state: 'failed' });
  });

  it('an expunge waits for a replay under way, then fails the replayed dead letter', async () => {
    const m1 = await publishOne();
    await t.db.query(`update courier_deliveries set state = 'failed'`);
    // The replay's transaction held open: the database handed to it runs its work inside one.
    const replay = await holdOpen(t.db, (tx) => {
      const inside = Object.assign(Object.create(t.db) as Database, {
        transaction: <T>(work: (inner: Transaction) => Promise<T>) => work(tx),
      });
      return replayDeadLetters(inside, { endpointId }, clock.now());
    });
    const expunge = blockedUntilCommit(t.db, replay, () =>
      t.db.transaction((tx) => expungePayload(tx, { messageId: m1, now: clock.now() })),
    );
    expect(await expunge).toBe('expunged');
    expect(await deliveryOf(m1)).toMatchObject({ state: 'failed' });
    expect(await sentNow()).toEqual([]);
  });

  it('a replay waits for a writer holding a message that then leaves it, and replays its dead letter', async () => {
    const [m1, m2, m3] = [await publishOne(), await publishOne(), await publishOne()];
    await t.db.query(`update courier_deliveries set state = 'failed'`);
    // Retention or an expunge that finds an attempt under way elsewhere: the message is locked, then left.
    const busy = await holdOpen(t.db, (tx) =>
      tx.query('select 1 from courier_messages where id = $1 for update', [m1]),
    );
    const first = await blockedUntilCommit(t.db, busy, () =>
      replayDeadLetters(t.db, { endpointId, limit: 2 }, clock.now()),
    );
    expect(first).toEqual({ replayed: 2, scanned: 2, lastId: Number((await deliveryOf(m2)).id) });
    const second = await replayDeadLetters(
      t.db,
      { endpointId, limit: 2, afterId: first.lastId! },
      clock.now(),
    );
    expect(second).toMatchObject({ replayed: 1, scanned: 1 });
    expect((await sentNow()).map(([m]) => m)).toEqual([m1, m2, m3]);
  });

  it('a replay batch passes by a dead letter another writer holds, and pages on', async () => {
    const [m1, m2, m3] = [await publishOne(), await publishOne(), await publishOne()];
    await t.db.query(`update courier_deliveries set state = 'failed'`);
    const d1 = (await deliveryOf(m1)).id;
    const other = await holdOpen(t.db, (tx) =>
      tx.query('select 1 from courier_deliveries where id = $1 for update', [d1]),
    );
    const first = await replayDeadLetters(t.db, { endpointId, limit: 2 }, clock.now());
    expect(first).toEqual({ replayed: 1, scanned: 2, lastId: Number((await deliveryOf(m2)).id) });
    const second = await replayDeadLetters(
      t.db,
      { endpointId, limit: 2, afterId: first.lastId! },
      clock.now(),
    );
    expect(second).toMatchObject({ replayed: 1, scanned: 1 });
    await other.commit();
    expect([(await deliveryOf(m1)).state, (await deliveryOf(m3)).state]).toEqual(['failed', 'pending']);
  });

  it('a dead letter resent and claimed while the replay waited is left to its attempt', async () => {
    const [m1, m2] = [await publishOne(), await publishOne()];
    await t.db.query(`update courier_deliveries set state = 'failed'`);
    const busy = await holdOpen(t.db, (tx) =>
      tx.query('select 1 from courier_messages where id = $1 for update', [m1]),
    );
    const replay = replayDeadLetters(t.db, { endpointId }, clock.now());
    await blockedBy(t.db, busy.pid);
    // Listed dead by the replay, then resent and taken by a worker before the replay locks it.
    await t.db.transaction((tx) => resendDelivery(tx, { messageId: m2, endpointId, now: clock.now() }));
    expect((await sentNow()).map(([m]) => m)).toEqual([m2]);
    await busy.commit();
    expect((await replay).replayed).toBe(1);
    expect(await deliveryOf(m2)).toMatchObject({ state: 'pending', leased: true });
    expect(await deliveryOf(m1)).toMatchObject({ state: 'pending', leased: false });
  });

  it('a resend racing the deletion of its endpoint makes nothing (endpoint_gone)', async () => {
    const m1 = await publishOne();
    await t.db.query(`update courier_endpoints set deleted_at = $2 where id = $1`, [endpointId, new Date()]);
    expect(
      await t.db.transaction((tx) => resendDelivery(tx, { messageId: m1, endpointId, now: clock.now() })),
    ).toBe('endpoint_gone');
  });

  it('a resend waiting on an expunge sees it (409)', async () => {
    const m = await publishOne();
    await t.db.query(`update courier_deliveries set state = 'failed'`);
    const ex = await holdOpen(t.db, (tx) => expungePayload(tx, { messageId: m, now: clock.now() }));
    const resend = t.db.transaction((tx) =>
      resendDelivery(tx, { messageId: m, endpointId, now: clock.now() }),
    );
    await blockedBy(t.db, ex.pid);
    await ex.commit();
    expect(await resend).toBe('expunged');
    expect(await deliveryOf(m)).toMatchObject({ state: 'failed' });
  });

  it('a claim during an expunge passes the delivery by; afterwards nothing is claimable', async () => {
    const m = await publishOne();
    const ex = await holdOpen(t.db, (tx) => expungePayload(tx, { messageId: m, now: clock.now() }));
    const during = await claim(t.db, { owner: 'w', now: clock.now(), leaseMs: 60_000, limit: 10 });
    expect(during.deliveries).toHaveLength(0);
    await ex.commit();
    const after = await claim(t.db, { owner: 'w', now: clock.now(), leaseMs: 60_000, limit: 10 });
    expect(after.deliveries).toHaveLength(0);
    expect(await deliveryOf(m)).toMatchObject({ state: 'failed', leased: false });
  });

  it('an expunge waiting on a claim in progress then refuses (in_flight)', async () => {
    const m = await publishOne();
    const c = await holdOpen(t.db, (tx) =>
      claim(tx, { owner: 'w', now: clock.now(), leaseMs: 60_000, limit: 10 }),
    );
    const expunge = t.db.transaction((tx) => expungePayload(tx, { messageId: m, now: clock.now() }));
    await blockedBy(t.db, c.pid);
    await c.commit();
    expect(await expunge).toBe('in_flight');
  });

  it("an expired lease blocks until reaped; then the hung worker's late retry completion is ignored", async () => {
    const m = await publishOne();
    const [d] = (await claim(t.db, { owner: 'hung', now: clock.now(), leaseMs: 1_000, limit: 10 }))
      .deliveries;
    clock.advance(5_000);
    expect(await t.db.transaction((tx) => expungePayload(tx, { messageId: m, now: clock.now() }))).toBe(
      'in_flight',
    );
    expect(await reapExpiredLeases(t.db, clock.now())).toBe(1);
    expect(await t.db.transaction((tx) => expungePayload(tx, { messageId: m, now: clock.now() }))).toBe(
      'expunged',
    );
    await complete(t.db, 'hung', clock.now(), [retryCompletion(d!.id, 1, clock.now())], 100);
    expect(await deliveryOf(m)).toMatchObject({ state: 'failed', leased: false });
  });
  describe('a deletion past the payload’s own retention, with an attempt under way', () => {
    const underWay = async () => {
      const { m } = await expiring();
      const [d] = (await claim(t.db, { owner: 'w', now: clock.now(), leaseMs: 60_000, limit: 10 }))
        .deliveries;
      clock.advance(1_000);
      const retried = (db: Queryable) =>
        complete(db, 'w', clock.now(), [retryCompletion(d!.id, 1, clock.now())], 100);
      const stored = async () =>
        (
          await t.db.query<{ bytes: number; expunged: boolean }>(
            'select length(payload) as bytes, expunged_at is not null as expunged from courier_messages where id = $1',
            [m],
          )
        ).rows[0]!;
      return { m, retried, stored };
    };
    const expunge = (m: string) => (tx: Queryable) => expungePayload(tx, { messageId: m, now: clock.now() });

    it('the sweep passes a deletion under way by, and keeps the bytes until the attempt has ended', async () => {
      const { m, retried, stored } = await underWay();
      const sweeper = new PayloadExpirySweeper(t.db);
      const deletion = await holdOpen(t.db, async (tx) => expect(await expunge(m)(tx)).toBe('expired'));
      // SKIP LOCKED: not queued behind the deletion, whose row is left to a later sweep.
      expect(await notBlockedBy(t.db, deletion, () => sweeper.sweep(clock.now()))).toEqual({
        expunged: 0,
        inFlight: 0,
        failed: 0,
      });
      expect(await sweeper.sweep(clock.now())).toEqual({ expunged: 0, inFlight: 1, failed: 0 });
      expect((await stored()).bytes).toBeGreaterThan(0);
      await retried(t.db);
      expect(await sweeper.sweep(clock.now())).toMatchObject({ expunged: 1 });
      expect(await stored()).toEqual({ bytes: 0, expunged: true });
    });

    it('waits for the attempt’s completion under way, then empties the bytes its retry no longer needs', async () => {
      const { m, retried, stored } = await underWay();
      const completion = await holdOpen(t.db, (tx) => retried(tx));
      expect(await blockedUntilCommit(t.db, completion, () => t.db.transaction(expunge(m)))).toBe('expunged');
      expect(await deliveryOf(m)).toMatchObject({ state: 'failed', leased: false });
      expect(await stored()).toEqual({ bytes: 0, expunged: true });
    });

    it('holds the completion back while it runs; the retry then fails as expired, and a sweep empties the bytes', async () => {
      const { m, retried, stored } = await underWay();
      const deletion = await holdOpen(t.db, async (tx) => expect(await expunge(m)(tx)).toBe('expired'));
      await blockedUntilCommit(t.db, deletion, () => retried(t.db));
      expect(await deliveryOf(m)).toMatchObject({ state: 'failed', leased: false });
      const { rows } = await t.db.query('select last_error from courier_deliveries where message_id = $1', [
        m,
      ]);
      expect(rows).toEqual([{ last_error: 'payload expired' }]);
      expect(await sentNow()).toEqual([]);
      expect((await stored()).bytes).toBeGreaterThan(0);
      expect(await new PayloadExpirySweeper(t.db).sweep(clock.now())).toMatchObject({ expunged: 1 });
      expect(await stored()).toEqual({ bytes: 0, expunged: true });
    });
  });

  it('a deletion queued behind the sweep keeps the expiry as the time the payload went', async () => {
    const { m, expiry } = await expiring();
    clock.advance(5_000);
    const sweep = await holdOpen(t.db, async (tx) =>
      expect(await expireDuePayload(tx, { messageId: m, now: clock.now() })).toBe('expunged'),
    );
    const deletion = () => t.db.transaction((tx) => expungePayload(tx, { messageId: m, now: clock.now() }));
    expect(await blockedUntilCommit(t.db, sweep, deletion)).toBe('expunged');
    const { rows } = await t.db.query(
      `select length(m.payload) as bytes, m.expunged_at, d.state, d.last_error,
              (select count(*)::int from courier_payload_expiries e where e.message_id = m.id) as expiries
         from courier_messages m join courier_deliveries d on d.message_id = m.id where m.id = $1`,
      [m],
    );
    expect(rows).toEqual([
      { bytes: 0, expunged_at: expiry, state: 'failed', last_error: 'payload expired', expiries: 0 },
    ]);
  });
});
