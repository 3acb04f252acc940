import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.ts';
import { PayloadExpirySweeper } from '../../src/dispatch/payload-expiry.ts';
import { newId } from '../../src/ids.ts';
import { publish } from '../../src/store/publisher.ts';
import { claim } from '../../src/store/queries/claim.ts';
import { release } from '../../src/store/queries/unclaim.ts';
import { BACKENDS, openTestDatabase, type TestDatabase } from '../support/databases.ts';
import { makeApp, makeEndpoint } from '../support/fixtures.ts';

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
      await t.db.query<{ bytes: number; expunged_at: Date | null; payload_expires_at: Date | null }>(
        'select length(payload) as bytes, expunged_at, payload_expires_at from courier_messages where id = $1',
        [id],
      )
    ).rows[0]!;
  const deliveries = async (id: string) =>
    (
      await t.db.query<{ state: string; last_error: string | null }>(
        'select state, last_error from courier_deliveries where message_id = $1',
        [id],
      )
    ).rows;

  beforeAll(async () => {
    t = await openTestDatabase(backend);
    appId = (await makeApp(t.db, clock.now())).id;
    await makeEndpoint(t.db, appId, clock.now(), { url: 'http://127.0.0.1:9/hook' });
  });
  afterAll(async () => {
    await t.drop();
  });

  it('expunges a payload when its retention runs out, failing what was still to be sent', async () => {
    const hour = await publishKept(HOUR);
    const day = await publishKept(24 * HOUR);
    const kept = await publishKept(null);
    const sweeper = new PayloadExpirySweeper(t.db);
    expect(await sweeper.sweep(clock.now() + HOUR - 1)).toEqual({ expunged: 0, inFlight: 0 });
    expect(await sweeper.sweep(clock.now() + HOUR)).toEqual({ expunged: 1, inFlight: 0 });
    expect(await stored(hour)).toEqual({
      bytes: 0,
      expunged_at: new Date(clock.now() + HOUR),
      payload_expires_at: null,
    });
    expect(await deliveries(hour)).toEqual([{ state: 'failed', last_error: 'payload expired' }]);
    // The others are untouched, and the expunged one is not looked at again.
    for (const id of [day, kept]) {
      expect((await stored(id)).bytes).toBe(15);
      expect(await deliveries(id)).toEqual([{ state: 'pending', last_error: null }]);
    }
    expect(await sweeper.sweep(clock.now() + 2 * HOUR)).toEqual({ expunged: 0, inFlight: 0 });
    expect(await sweeper.sweep(clock.now() + 24 * HOUR)).toEqual({ expunged: 1, inFlight: 0 });
    expect((await stored(kept)).bytes).toBe(15);
    await t.db.query('delete from courier_deliveries');
  });

  it('waits for an attempt under way, since a retry of it needs the bytes', async () => {
    clock.advance(HOUR);
    const id = await publishKept(HOUR);
    const claimed = await claim(t.db, { owner: 'w1', now: clock.now(), leaseMs: 60_000, limit: 10 });
    expect(claimed.deliveries.map((d) => d.messageId)).toEqual([id]);
    const sweeper = new PayloadExpirySweeper(t.db);
    expect(await sweeper.sweep(clock.now() + HOUR)).toEqual({ expunged: 0, inFlight: 1 });
    expect((await stored(id)).bytes).toBe(15);
    await release(t.db, 'w1', [claimed.deliveries[0]!.id]);
    expect(await sweeper.sweep(clock.now() + HOUR)).toEqual({ expunged: 1, inFlight: 0 });
    expect(await deliveries(id)).toEqual([{ state: 'failed', last_error: 'payload expired' }]);
    await t.db.query('delete from courier_deliveries');
  });

  it('looks at a bounded number per sweep, soonest first, and the rest next time', async () => {
    clock.advance(HOUR);
    const ids = [await publishKept(3 * HOUR), await publishKept(HOUR), await publishKept(2 * HOUR)];
    const sweeper = new PayloadExpirySweeper(t.db, 1, 2);
    expect(await sweeper.sweep(clock.now() + 3 * HOUR)).toEqual({ expunged: 2, inFlight: 0 });
    expect((await stored(ids[0]!)).bytes).toBe(15);
    expect((await stored(ids[1]!)).bytes).toBe(0);
    expect((await stored(ids[2]!)).bytes).toBe(0);
    expect(await sweeper.sweep(clock.now() + 3 * HOUR)).toEqual({ expunged: 1, inFlight: 0 });
    expect((await stored(ids[0]!)).bytes).toBe(0);
  });
});
