import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.ts';
import { newId } from '../../src/ids.ts';
import { publish } from '../../src/store/publisher.ts';
import { claim } from '../../src/store/queries/claim.ts';
import { complete } from '../../src/store/queries/complete.ts';
import { holdEndpoint } from '../../src/store/queries/endpoint-status.ts';
import { expungePayload } from '../../src/store/queries/expunge.ts';
import { replayAllMissing, replayMissingBatch } from '../../src/store/queries/replay-missing.ts';
import { resendDelivery } from '../../src/store/queries/resend.ts';
import { deleteEndpoint, type Endpoint } from '../../src/store/repos/endpoints.ts';
import { BACKENDS, openTestDatabase, type TestDatabase } from '../support/databases.ts';
import { deliveredCompletion, emptyTables, makeApp, makeEndpoint, publishJson } from '../support/fixtures.ts';
import { blockedBy, blockedUntilCommit, holdOpen } from '../support/transactions.ts';

/** Svix's replay-missing: a delivery for each message an endpoint never had one of. */
describe.each(BACKENDS)('replaying missing messages on %s', (backend) => {
  let t: TestDatabase;
  let clock: ManualClock;
  let appId: string;

  beforeAll(async () => {
    t = await openTestDatabase(backend);
  });
  afterAll(async () => {
    await t.drop();
  });
  beforeEach(async () => {
    clock = new ManualClock(Date.UTC(2026, 0, 1, 12));
    await emptyTables(t.db);
    appId = (await makeApp(t.db, clock.now())).id;
  });

  const send = async (eventType = 'a', channels?: string[], app = appId) => {
    clock.advance(1000);
    return (await publishJson(t.db, app, clock.now(), { eventType }, { eventType, channels })).messageId;
  };
  const endpoint = (fields: { filterTypes?: string[]; channels?: string[] } = {}) =>
    makeEndpoint(t.db, appId, clock.now(), { url: 'http://127.0.0.1:1/hook', ...fields });
  const replayAll = (ep: Endpoint, since = 0, until?: number) =>
    replayAllMissing(t.db, appId, { endpointId: ep.id, since, until }, clock.now());
  const deliveries = async (ep: Endpoint) =>
    (
      await t.db.query<{ message_id: string; state: string; trigger: number; attempts: number }>(
        `select message_id, state, trigger, attempts from courier_deliveries where endpoint_id = $1
          order by message_id`,
        [ep.id],
      )
    ).rows;
  const claimAll = async () =>
    (await claim(t.db, { owner: 'w', now: clock.now(), leaseMs: 60_000, limit: 100 })).deliveries;

  it('makes each message the endpoint takes, and never had, due now as a manual attempt', async () => {
    const [a, b, ax, ay] = [await send('a'), await send('b'), await send('a', ['x']), await send('a', ['y'])];
    const other = (await makeApp(t.db, clock.now())).id;
    await send('a', undefined, other);
    const ep = await endpoint({ filterTypes: ['a'], channels: ['x'] });
    clock.advance(5000);
    expect(await replayAll(ep)).toBe(1);
    expect(await deliveries(ep)).toEqual([{ message_id: ax, state: 'pending', trigger: 1, attempts: 0 }]);
    const wide = await endpoint();
    expect(await replayAll(wide)).toBe(4);
    expect((await deliveries(wide)).map((d) => d.message_id)).toEqual([a, b, ax, ay].sort());
    // Woken: claimable at once.
    expect((await claimAll()).map((d) => d.messageId).sort()).toEqual([ax, a, b, ax, ay].sort());
  });

  it('passes by what the endpoint has a delivery of, or got', async () => {
    const ep = await endpoint();
    const [waiting, delivered, dead] = [await send(), await send(), await send()];
    const claimed = await claimAll();
    const idOf = (m: string) => claimed.find((d) => d.messageId === m)!.id;
    await complete(
      t.db,
      'w',
      clock.now(),
      [
        { ...deliveredCompletion(idOf(delivered), 1, clock.now()), streak: 'reset' },
        {
          ...deliveredCompletion(idOf(dead), 1, clock.now()),
          state: 'failed',
          lastError: 'HTTP 410',
          attempt: {
            ...deliveredCompletion(idOf(dead), 1, clock.now()).attempt,
            statusCode: 410,
            decision: 'failed',
          },
        },
      ],
      100,
    );
    expect(await replayAll(ep)).toBe(0);
    // The one in flight (leased), the dead letter; the delivered one left only its attempt.
    expect((await deliveries(ep)).map((d) => [d.message_id, d.state])).toEqual(
      [
        [waiting, 'pending'],
        [dead, 'failed'],
      ].sort(),
    );
  });

  it('makes each delivery no earlier than its message, as a resend does, under a publisher whose clock is ahead', async () => {
    // Published by a process whose clock is ten minutes ahead of this one's: a recovery by
    // publish time passes by the dead letters made before its range.
    const ahead = clock.now() + 600_000;
    const message = (await publishJson(t.db, appId, ahead, { n: 1 }, { eventType: 'a' })).messageId;
    const [missing, resent] = [await endpoint(), await endpoint()];
    expect(await replayAll(missing)).toBe(1);
    expect(
      await t.db.transaction((tx) =>
        resendDelivery(tx, { messageId: message, endpointId: resent.id, now: clock.now() }),
      ),
    ).toBe('scheduled');
    const { rows } = await t.db.query<{ endpoint_id: string; created_at: Date }>(
      'select endpoint_id, created_at from courier_deliveries where message_id = $1 order by endpoint_id',
      [message],
    );
    expect(rows.map((r) => [r.endpoint_id, r.created_at.getTime()])).toEqual(
      [missing.id, resent.id].sort().map((id) => [id, ahead]),
    );
  });

  it('takes the messages published in [since, until), by the time their ids carry', async () => {
    // Later than any id made before in this process: ids never go back in time.
    clock = new ManualClock(Date.UTC(2027 + BACKENDS.indexOf(backend), 0, 1));
    const start = clock.now();
    const ids = [await send(), await send(), await send()];
    const ep = await endpoint();
    expect(await replayAll(ep, start + 2000, start + 3000)).toBe(1);
    expect((await deliveries(ep)).map((d) => d.message_id)).toEqual([ids[1]]);
    expect(await replayAll(ep, start + 2000)).toBe(1);
    expect((await deliveries(ep)).map((d) => d.message_id)).toEqual(ids.slice(1));
  });

  it('passes by messages whose payload is gone', async () => {
    const expunged = await send();
    await t.db.transaction((tx) => expungePayload(tx, { messageId: expunged, now: clock.now() }));
    clock.advance(1000);
    const expiring = newId('msg', clock.now());
    await publish(t.db, {
      appId,
      messageId: expiring,
      eventType: 'a',
      payload: Buffer.from('{}'),
      now: clock.now(),
      payloadExpiresAt: clock.now() + 60_000,
    });
    const kept = await send();
    const ep = await endpoint();
    clock.advance(60_000);
    expect(await replayAll(ep)).toBe(1);
    expect((await deliveries(ep)).map((d) => d.message_id)).toEqual([kept]);
  });

  it('holds them while the endpoint is paused or disabled', async () => {
    const ep = await endpoint();
    await t.db.transaction((tx) => holdEndpoint(tx, ep.id, 'disabled', 'test', clock.now()));
    const missed = await send();
    expect(await replayAll(ep)).toBe(1);
    expect(await deliveries(ep)).toEqual([{ message_id: missed, state: 'held', trigger: 1, attempts: 0 }]);
    expect(await claimAll()).toEqual([]);
  });

  it('pages in id order and ends at the newest message when the sweep began', async () => {
    const ids = [await send(), await send(), await send(), await send()];
    const ep = await endpoint();
    const range = { endpointId: ep.id, since: 0, through: ids[2]!, limit: 2 };
    const first = await replayMissingBatch(t.db, { ...range, afterId: null }, clock.now());
    expect(first).toEqual({ replayed: 2, scanned: 2, lastId: ids[1] });
    const second = await replayMissingBatch(t.db, { ...range, afterId: first.lastId }, clock.now());
    expect(second).toEqual({ replayed: 1, scanned: 1, lastId: ids[2] });
    expect((await deliveries(ep)).map((d) => d.message_id)).toEqual(ids.slice(0, 3));
  });

  it('refuses an endpoint deleted meanwhile', async () => {
    await send();
    const ep = await endpoint();
    await t.db.transaction((tx) => deleteEndpoint(tx, ep.id, clock.now()));
    await expect(replayAll(ep)).rejects.toThrow(/not found/);
    expect(await deliveries(ep)).toEqual([]);
  });

  it.runIf(backend === 'pg')('leaves a delivery a resend is making meanwhile to the resend', async () => {
    const message = await send();
    const ep = await endpoint();
    const resend = await holdOpen(t.db, (tx) =>
      resendDelivery(tx, { messageId: message, endpointId: ep.id, now: clock.now() }),
    );
    const replay = replayAll(ep);
    await blockedBy(t.db, resend.pid);
    await resend.commit();
    expect(await replay).toBe(0);
    expect(await deliveries(ep)).toEqual([
      { message_id: message, state: 'pending', trigger: 1, attempts: 0 },
    ]);
  });

  it.runIf(backend === 'pg')(
    'waits for an expunge under way, and passes the expunged message by',
    async () => {
      const [expunged, kept] = [await send(), await send()];
      const ep = await endpoint();
      const expunge = await holdOpen(t.db, (tx) =>
        expungePayload(tx, { messageId: expunged, now: clock.now() }),
      );
      expect(await blockedUntilCommit(t.db, expunge, () => replayAll(ep))).toBe(1);
      expect((await deliveries(ep)).map((d) => d.message_id)).toEqual([kept]);
    },
  );

  it.runIf(backend === 'pg')(
    'waits for an expunge that keeps the payload, and replays the message',
    async () => {
      const first = await endpoint();
      const message = await send();
      expect(await claimAll()).toHaveLength(1);
      const ep = await endpoint();
      // An attempt under way to the first endpoint holds the expunge back: the payload stays.
      const expunge = await holdOpen(t.db, async (tx) =>
        expect(await expungePayload(tx, { messageId: message, now: clock.now() })).toBe('in_flight'),
      );
      expect(await blockedUntilCommit(t.db, expunge, () => replayAll(ep))).toBe(1);
      expect(await deliveries(ep)).toEqual([
        { message_id: message, state: 'pending', trigger: 1, attempts: 0 },
      ]);
      expect(await deliveries(first)).toHaveLength(1);
    },
  );
});
