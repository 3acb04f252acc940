import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.ts';
import { PayloadExpirySweeper } from '../../src/dispatch/payload-expiry.ts';
import { newId } from '../../src/ids.ts';
import { silentLogger } from '../../src/logger.ts';
import { publish } from '../../src/store/publisher.ts';
import { claim } from '../../src/store/queries/claim.ts';
import { complete } from '../../src/store/queries/complete.ts';
import { replayDeadLetters } from '../../src/store/queries/dead-letter.ts';
import { resendDelivery } from '../../src/store/queries/resend.ts';
import { reapExpiredLeases, release } from '../../src/store/queries/unclaim.ts';
import { BACKENDS, openTestDatabase, type TestDatabase } from '../support/databases.ts';
import { virtualWorker } from '../support/engine.ts';
import { deliveredCompletion, makeApp, makeEndpoint } from '../support/fixtures.ts';
import { holdOpen } from '../support/transactions.ts';

const HOUR = 3_600_000;

describe.each(BACKENDS)('payload expiry on %s', (backend) => {
  let t: TestDatabase;
  // Ids carry their time and never go back (ids.ts): each backend's run starts a day later.
  const clock = new ManualClock(Date.UTC(2026, 2, 1 + BACKENDS.indexOf(backend), 12));
  let appId: string;

  const publishKept = async (keepMs: number | null) => {
    const now = clock.now();
    const messageId = newId('msg', now);
    await publish(t.db, {
      appId,
      messageId,
      eventType: 'invoice.paid',
      payload: Buffer.from('{"card":"4242"}'),
      now,
      payloadExpiresAt: keepMs === null ? null : now + keepMs,
    });
    return messageId;
  };
  const stored = async (id: string) =>
    (
      await t.db.query<{ bytes: number; expunged_at: Date | null; expires_at: Date | null }>(
        `select length(m.payload) as bytes, m.expunged_at, x.expires_at
           from courier_messages m left join courier_payload_expiries x on x.message_id = m.id where m.id = $1`,
        [id],
      )
    ).rows[0]!;
  const deliveries = async (id: string) =>
    (
      await t.db.query<{ state: string; last_error: string | null; leased: boolean }>(
        `select state, last_error, lease_owner is not null as leased from courier_deliveries
          where message_id = $1 order by endpoint_id`,
        [id],
      )
    ).rows;
  const pending = { state: 'pending', last_error: null, leased: false };
  const expired = { state: 'failed', last_error: 'payload expired', leased: false };

  beforeAll(async () => {
    t = await openTestDatabase(backend);
    appId = (await makeApp(t.db, clock.now())).id;
    await makeEndpoint(t.db, appId, clock.now(), { url: 'http://127.0.0.1:9/a' });
    await makeEndpoint(t.db, appId, clock.now(), { url: 'http://127.0.0.1:9/b' });
  });
  afterAll(async () => {
    await t.drop();
  });

  it('expunges a payload when its retention runs out, failing what was still to be sent', async () => {
    const hour = await publishKept(HOUR);
    const day = await publishKept(24 * HOUR);
    const kept = await publishKept(null);
    const sweeper = new PayloadExpirySweeper(t.db);
    expect(await sweeper.sweep(clock.now() + HOUR - 1)).toEqual({ expunged: 0, inFlight: 0, failed: 0 });
    expect(await sweeper.sweep(clock.now() + HOUR)).toEqual({ expunged: 1, inFlight: 0, failed: 0 });
    expect(await stored(hour)).toEqual({
      bytes: 0,
      expunged_at: new Date(clock.now() + HOUR),
      expires_at: null,
    });
    expect(await deliveries(hour)).toEqual([expired, expired]);
    // The others are untouched, and the expunged one is not looked at again.
    for (const id of [day, kept]) {
      expect((await stored(id)).bytes).toBe(15);
      expect(await deliveries(id)).toEqual([pending, pending]);
    }
    expect((await stored(day)).expires_at).toEqual(new Date(clock.now() + 24 * HOUR));
    expect((await stored(kept)).expires_at).toBeNull();
    expect(await sweeper.sweep(clock.now() + 2 * HOUR)).toEqual({ expunged: 0, inFlight: 0, failed: 0 });
    // Swept an hour late, it is recorded as gone when its retention ran out, as the API showed it.
    expect(await sweeper.sweep(clock.now() + 25 * HOUR)).toEqual({ expunged: 1, inFlight: 0, failed: 0 });
    expect(await stored(day)).toEqual({
      bytes: 0,
      expunged_at: new Date(clock.now() + 24 * HOUR),
      expires_at: null,
    });
    expect((await stored(kept)).bytes).toBe(15);
    await t.db.query('delete from courier_deliveries');
  });

  it('passes by a payload whose expunge fails, expunging the rest, and logs it', async () => {
    clock.advance(HOUR);
    const broken = await publishKept(HOUR);
    const fine = await publishKept(HOUR);
    // What the expunge cannot blank, for want of a better fault: a stored response that is not JSON.
    await t.db.query(
      `insert into courier_idempotency_keys (scope, key, method, path, fingerprint, status, body, message_id, locked_until, expires_at)
       values ('s', 'k', 'POST', '/p', 'f', 202, 'not json', $1, $2, $2)`,
      [broken, new Date(clock.now() + 24 * HOUR)],
    );
    const warnings: unknown[] = [];
    const log = { ...silentLogger, warn: (o: unknown, msg?: string) => void warnings.push([o, msg]) };
    await new PayloadExpirySweeper(t.db).sweepLogged(clock.now() + HOUR, log);
    expect((await stored(fine)).bytes).toBe(0);
    expect((await stored(broken)).bytes).toBe(15);
    expect(warnings).toEqual([
      [{ err: expect.any(Error), failed: 1 }, 'could not expunge some payloads past their retention'],
    ]);
    await t.db.query('delete from courier_idempotency_keys');
    await t.db.query('delete from courier_payload_expiries');
    await t.db.query('delete from courier_deliveries');
  });

  it('keeps the bytes for an attempt under way, which a retry of it needs, and sends nothing more', async () => {
    clock.advance(HOUR);
    const id = await publishKept(HOUR);
    const claimed = await claim(t.db, { owner: 'w1', now: clock.now(), leaseMs: 60_000, limit: 1 });
    expect(claimed.deliveries.map((d) => d.messageId)).toEqual([id]);
    const sweeper = new PayloadExpirySweeper(t.db);
    expect(await sweeper.sweep(clock.now() + HOUR)).toEqual({ expunged: 0, inFlight: 1, failed: 0 });
    expect((await stored(id)).bytes).toBe(15);
    // The other endpoint's delivery is not sent with the expired bytes.
    expect((await deliveries(id)).filter((d) => !d.leased)).toEqual([expired]);
    await release(t.db, 'w1', [claimed.deliveries[0]!], clock.now() + HOUR);
    expect(await sweeper.sweep(clock.now() + HOUR)).toEqual({ expunged: 1, inFlight: 0, failed: 0 });
    expect(await deliveries(id)).toEqual([expired, expired]);
    await t.db.query('delete from courier_deliveries');
  });

  describe('an attempt under way when its payload expired is not sent again, before any later sweep, when its lease ends', () => {
    const expiredUnderWay = async () => {
      clock.advance(HOUR);
      const id = await publishKept(HOUR);
      const claimed = await claim(t.db, { owner: 'w1', now: clock.now(), leaseMs: 60_000, limit: 1 });
      expect(await new PayloadExpirySweeper(t.db).sweep(clock.now() + HOUR)).toEqual({
        expunged: 0,
        inFlight: 1,
        failed: 0,
      });
      return { id, delivery: claimed.deliveries[0]! };
    };
    const afterwards = async (id: string) => {
      expect(await deliveries(id)).toEqual([expired, expired]);
      // Nothing of it is claimed again, however late.
      const later = await claim(t.db, {
        owner: 'w2',
        now: clock.now() + 10 * HOUR,
        leaseMs: 60_000,
        limit: 10,
      });
      expect(later.deliveries).toEqual([]);
      expect(await new PayloadExpirySweeper(t.db).sweep(clock.now() + HOUR)).toEqual({
        expunged: 1,
        inFlight: 0,
        failed: 0,
      });
      await t.db.query('delete from courier_deliveries');
    };

    it('in a retry', async () => {
      const { id, delivery } = await expiredUnderWay();
      const at = clock.now() + HOUR + 1_000;
      const retry = deliveredCompletion(delivery.id, 1, at);
      await complete(
        t.db,
        'w1',
        at,
        [
          {
            ...retry,
            state: 'pending',
            nextAttemptAt: at + 5_000,
            lastError: 'HTTP 503',
            streak: 'unchanged',
          },
        ],
        100,
      );
      await afterwards(id);
    });

    it('in a give-back', async () => {
      const { id, delivery } = await expiredUnderWay();
      expect(await release(t.db, 'w1', [delivery], clock.now() + HOUR)).toEqual({ released: 1, busy: [] });
      await afterwards(id);
    });

    it('in a lease taken over', async () => {
      const { id } = await expiredUnderWay();
      expect(await reapExpiredLeases(t.db, clock.now() + HOUR + 60_000)).toBe(1);
      await afterwards(id);
    });

    it('not before its expiry: a give-back then leaves it to be sent', async () => {
      clock.advance(HOUR);
      const id = await publishKept(HOUR);
      const claimed = await claim(t.db, { owner: 'w1', now: clock.now(), leaseMs: 60_000, limit: 1 });
      await release(t.db, 'w1', claimed.deliveries, clock.now() + HOUR - 1);
      expect(await deliveries(id)).toEqual([pending, pending]);
      expect(await new PayloadExpirySweeper(t.db).sweep(clock.now() + HOUR)).toEqual({
        expunged: 1,
        inFlight: 0,
        failed: 0,
      });
      await t.db.query('delete from courier_deliveries');
    });
  });

  it('hands over nothing of a payload past its expiry that no sweep has reached: given back, it fails', async () => {
    clock.advance(HOUR);
    const id = await publishKept(HOUR);
    const kept = await publishKept(null);
    const now = clock.now() + HOUR;
    // Each endpoint's share is its in-flight cap (10): 20 reach both.
    const claimed = await claim(t.db, { owner: 'w1', now, leaseMs: 60_000, limit: 20 });
    expect(claimed.deliveries.map((d) => d.messageId)).toEqual([kept, kept]);
    expect(claimed.expired).toHaveLength(2);
    expect(await deliveries(id)).toEqual([
      { ...pending, leased: true },
      { ...pending, leased: true },
    ]);
    expect(await release(t.db, 'w1', claimed.expired, now)).toEqual({ released: 2, busy: [] });
    expect(await deliveries(id)).toEqual([expired, expired]);
    const { rows } = await t.db.query<{ in_flight: number }>(
      'select in_flight from courier_endpoint_queues where endpoint_id in (select endpoint_id from courier_deliveries where message_id = $1)',
      [id],
    );
    expect(rows).toEqual([{ in_flight: 1 }, { in_flight: 1 }]); // the kept message's, still leased
    await release(t.db, 'w1', claimed.deliveries, now);
    expect(await new PayloadExpirySweeper(t.db).sweep(now)).toEqual({ expunged: 1, inFlight: 0, failed: 0 });
    await t.db.query('delete from courier_deliveries');
  });

  it('is not sent by a worker once past its expiry, though no sweep has reached it', async () => {
    clock.advance(HOUR);
    const id = await publishKept(HOUR);
    clock.advance(HOUR);
    const { worker, sender } = virtualWorker(t.db, { clock });
    try {
      expect(await worker.runOnce()).toBe(0);
    } finally {
      await sender.close();
    }
    expect(await deliveries(id)).toEqual([expired, expired]);
    const { rows } = await t.db.query('select 1 from courier_attempts where message_id = $1', [id]);
    expect(rows).toEqual([]);
    expect(await new PayloadExpirySweeper(t.db).sweep(clock.now())).toEqual({
      expunged: 1,
      inFlight: 0,
      failed: 0,
    });
    await t.db.query('delete from courier_deliveries');
  });

  it('replays and resends nothing of a payload past its expiry, swept or not, even while an attempt holds its bytes', async () => {
    clock.advance(HOUR);
    const id = await publishKept(HOUR);
    const endpoints = (
      await t.db.query<{ endpoint_id: string }>(
        'select endpoint_id from courier_deliveries where message_id = $1 order by endpoint_id',
        [id],
      )
    ).rows.map((r) => r.endpoint_id);
    const due = clock.now() + HOUR;
    // Due, not yet swept: as good as expunged.
    const resend = (endpointId: string) =>
      t.db.transaction((tx) => resendDelivery(tx, { messageId: id, endpointId, now: due }));
    expect(await resend(endpoints[0]!)).toBe('expunged');

    const claimed = await claim(t.db, { owner: 'w1', now: clock.now(), leaseMs: 60_000, limit: 1 });
    const sweeper = new PayloadExpirySweeper(t.db);
    expect(await sweeper.sweep(due)).toEqual({ expunged: 0, inFlight: 1, failed: 0 });
    // The attempt under way keeps the bytes; the other endpoint's dead letter stays dead.
    const other = endpoints.find((e) => e !== claimed.deliveries[0]!.endpointId)!;
    expect(await replayDeadLetters(t.db, { endpointId: other }, due)).toMatchObject({
      replayed: 0,
      scanned: 1,
    });
    expect(await resend(other)).toBe('expunged');
    expect((await deliveries(id)).filter((d) => !d.leased)).toEqual([expired]);
    await release(t.db, 'w1', [claimed.deliveries[0]!], due);
    expect(await sweeper.sweep(due)).toEqual({ expunged: 1, inFlight: 0, failed: 0 });
    await t.db.query('delete from courier_deliveries');
  });

  it('drops the expiry of a message that retention deleted first', async () => {
    clock.advance(HOUR);
    const id = await publishKept(HOUR);
    await t.db.query('delete from courier_deliveries where message_id = $1', [id]);
    await t.db.query('delete from courier_messages where id = $1', [id]);
    expect(await new PayloadExpirySweeper(t.db).sweep(clock.now() + HOUR)).toEqual({
      expunged: 0,
      inFlight: 0,
      failed: 0,
    });
    const { rows } = await t.db.query('select 1 from courier_payload_expiries where message_id = $1', [id]);
    expect(rows).toEqual([]);
  });

  it.skipIf(backend === 'pglite')(
    'passes by a message another worker is expiring, without waiting',
    async () => {
      clock.advance(HOUR);
      const id = await publishKept(HOUR);
      const other = await holdOpen(t.db, (tx) =>
        tx.query('select 1 from courier_payload_expiries where message_id = $1 for update', [id]),
      );
      try {
        expect(await new PayloadExpirySweeper(t.db).sweep(clock.now() + HOUR)).toEqual({
          expunged: 0,
          inFlight: 0,
          failed: 0,
        });
        expect((await stored(id)).bytes).toBe(15);
      } finally {
        await other.commit();
      }
      expect(await new PayloadExpirySweeper(t.db).sweep(clock.now() + HOUR)).toEqual({
        expunged: 1,
        inFlight: 0,
        failed: 0,
      });
      await t.db.query('delete from courier_deliveries');
    },
  );

  it('looks at a bounded number per sweep, soonest first, and the rest next time', async () => {
    clock.advance(HOUR);
    const ids = [await publishKept(3 * HOUR), await publishKept(HOUR), await publishKept(2 * HOUR)];
    await t.db.query('delete from courier_deliveries');
    const sweeper = new PayloadExpirySweeper(t.db, 1, 2);
    expect(await sweeper.sweep(clock.now() + 3 * HOUR)).toEqual({ expunged: 2, inFlight: 0, failed: 0 });
    expect((await stored(ids[0]!)).bytes).toBe(15);
    expect((await stored(ids[1]!)).bytes).toBe(0);
    expect((await stored(ids[2]!)).bytes).toBe(0);
    expect(await sweeper.sweep(clock.now() + 3 * HOUR)).toEqual({ expunged: 1, inFlight: 0, failed: 0 });
    expect((await stored(ids[0]!)).bytes).toBe(0);
  });
});
