import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.ts';
import { newId } from '../../src/ids.ts';
import { publish } from '../../src/store/publisher.ts';
import { bulkReplay, resendPage } from '../../src/store/queries/bulk-replay.ts';
import { claim } from '../../src/store/queries/claim.ts';
import { complete } from '../../src/store/queries/complete.ts';
import { holdEndpoint, resumeEndpoint } from '../../src/store/queries/endpoint-status.ts';
import { expungePayload } from '../../src/store/queries/expunge.ts';
import type { DestinationStatus } from '../../src/store/repos/destinations.ts';
import type { Endpoint } from '../../src/store/repos/endpoints.ts';
import { BACKENDS, openTestDatabase, type TestDatabase } from '../support/databases.ts';
import { deliveredCompletion, emptyTables, makeApp, makeEndpoint, publishJson } from '../support/fixtures.ts';
import { blockedBy, blockedUntilCommit, holdOpen } from '../support/transactions.ts';

/** Bulk replay's resends, a page at a time: each message as `…/resend` resends one. */
describe.each(BACKENDS)('bulk replay on %s', (backend) => {
  let t: TestDatabase;
  let clock: ManualClock;
  let appId: string;
  let ep: Endpoint;
  let since: number;

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
    ep = await makeEndpoint(t.db, appId, clock.now(), { url: 'http://127.0.0.1:1/hook' });
    since = clock.now();
  });

  const send = async () => {
    clock.advance(1000);
    return (await publishJson(t.db, appId, clock.now(), {})).messageId;
  };
  const replay = (status?: DestinationStatus) =>
    bulkReplay(t.db, { appId, endpointId: ep.id }, { since, status }, clock.now());
  const rows = async () =>
    (
      await t.db.query<{
        message_id: string;
        state: string;
        attempts: number;
        trigger: number;
        due: boolean;
        give_up_at: Date | null;
        last_error: string | null;
        leased: boolean;
        updated_at: Date;
      }>(
        `select message_id, state, attempts, trigger, next_attempt_at <= $2 as due, give_up_at, last_error,
                lease_owner is not null as leased, updated_at
           from courier_deliveries where endpoint_id = $1`,
        [ep.id, new Date(clock.now())],
      )
    ).rows;
  const rowOf = async (messageId: string) => (await rows()).find((r) => r.message_id === messageId);
  /** Claims every due delivery; completes the chosen ones as delivered, or dead (410), the rest stay leased. */
  const claimAll = async () =>
    (await claim(t.db, { owner: 'w', now: clock.now(), leaseMs: 60_000, limit: 100 })).deliveries;
  const finish = async (
    claimed: { id: number; messageId: string }[],
    outcomes: Record<string, 'delivered' | 'failed'>,
  ) => {
    const completions = claimed
      .filter((d) => outcomes[d.messageId])
      .map((d) => {
        const done = deliveredCompletion(d.id, 1, clock.now());
        if (outcomes[d.messageId] === 'delivered') return { ...done, streak: 'reset' as const };
        return {
          ...done,
          state: 'failed' as const,
          lastError: 'HTTP 410',
          attempt: { ...done.attempt, statusCode: 410, decision: 'failed' as const },
        };
      });
    await complete(t.db, 'w', clock.now(), completions, 100);
  };

  it('gives the dead a fresh budget, a delivered one a new delivery, brings a waiting one forward, and leaves what is in flight or gone', async () => {
    const [delivered, dead, waiting, inFlight, expunged] = [
      await send(),
      await send(),
      await send(),
      await send(),
      await send(),
    ];
    await finish(await claimAll(), { [delivered]: 'delivered', [dead]: 'failed' });
    // Waiting: given back with two attempts made, due in an hour.
    await t.db.query(
      `update courier_deliveries set lease_owner = null, lease_expires_at = null, attempts = 2, next_attempt_at = $2,
              give_up_at = $3, last_error = 'HTTP 503'
        where message_id = any($1)`,
      [[waiting, expunged], new Date(clock.now() + 3_600_000), new Date(clock.now() + 86_400_000)],
    );
    await t.db.transaction((tx) => expungePayload(tx, { messageId: expunged, now: clock.now() }));
    // Past its payload's expiry, not yet swept: as good as expunged.
    clock.advance(1000);
    const expiring = newId('msg', clock.now());
    await publish(t.db, {
      appId,
      messageId: expiring,
      eventType: 'a',
      payload: Buffer.from('{}'),
      now: clock.now(),
      payloadExpiresAt: clock.now() + 1000,
    });
    clock.advance(1000);

    expect(await replay()).toBe(3);
    expect(await rowOf(delivered)).toMatchObject({ state: 'pending', attempts: 0, trigger: 1, due: true });
    expect(await rowOf(dead)).toMatchObject({
      state: 'pending',
      attempts: 0,
      trigger: 1,
      due: true,
      give_up_at: null,
      last_error: null,
    });
    expect(await rowOf(waiting)).toMatchObject({
      state: 'pending',
      attempts: 2,
      trigger: 1,
      due: true,
      last_error: 'HTTP 503',
    });
    expect((await rowOf(waiting))!.give_up_at).not.toBeNull();
    expect(await rowOf(inFlight)).toMatchObject({ leased: true, trigger: 0, attempts: 0 });
    expect(await rowOf(expunged)).toMatchObject({ trigger: 0, due: false });
    expect(await rowOf(expiring)).toMatchObject({ trigger: 0, attempts: 0 });
    // Woken and due now: claimable at once.
    expect((await claimAll()).map((d) => d.messageId).sort()).toEqual([delivered, dead, waiting].sort());
  });

  it('holds what it resends while the endpoint is paused, a held delivery keeping its time held', async () => {
    const [dead, held, delivered] = [await send(), await send(), await send()];
    await finish(await claimAll(), { [dead]: 'failed', [delivered]: 'delivered' });
    await t.db.query(
      `update courier_deliveries set lease_owner = null, lease_expires_at = null where message_id = $1`,
      [held],
    );
    await t.db.transaction((tx) => holdEndpoint(tx, ep.id, 'paused', null, clock.now()));
    const heldSince = (await rowOf(held))!.updated_at;
    clock.advance(60_000);
    expect(await replay()).toBe(3);
    expect((await rows()).map((r) => r.state)).toEqual(['held', 'held', 'held']);
    expect((await rowOf(held))!.updated_at).toEqual(heldSince);
    expect(await rowOf(dead)).toMatchObject({ attempts: 0, give_up_at: null });
    expect(await claimAll()).toEqual([]);
  });

  it('wakes the endpoint for the deliveries it makes when nothing else is due there', async () => {
    const ids = [await send(), await send()];
    await finish(await claimAll(), Object.fromEntries(ids.map((id) => [id, 'delivered' as const])));
    expect(await replay()).toBe(2);
    expect((await claimAll()).map((d) => d.messageId).sort()).toEqual(ids.sort());
  });

  it('makes no delivery for a message chosen as queued and delivered since (onlyQueued)', async () => {
    const [dead, delivered] = [await send(), await send()];
    await finish(await claimAll(), { [dead]: 'failed', [delivered]: 'delivered' });
    const page = (onlyQueued: boolean) =>
      t.db.transaction((tx) => resendPage(tx, ep.id, [delivered, dead], clock.now(), onlyQueued));
    expect(await page(true)).toBe(1);
    expect((await rows()).map((r) => r.message_id)).toEqual([dead]);
    expect(await page(false)).toBe(2);
    expect((await rows()).map((r) => r.message_id).sort()).toEqual([dead, delivered].sort());
  });

  it.runIf(backend === 'pg')(
    'waits neither for a completion writing its deliveries nor for a delivery another writer holds',
    async () => {
      const [dead, inFlight, held] = [await send(), await send(), await send()];
      const claimed = await claimAll();
      await finish(claimed, { [dead]: 'failed', [held]: 'failed' });
      const leased = claimed.find((d) => d.messageId === inFlight)!;
      const heldId = claimed.find((d) => d.messageId === held)!.id;
      // A worker's completion that has written its delivery (a retry) and not yet reached the
      // queue rows, which it locks last; and a dead letter locked by another writer (a replay or
      // a resend under way).
      const completion = await holdOpen(t.db, (tx) =>
        tx.query(
          `update courier_deliveries set state = 'pending', attempts = 1, lease_owner = null, lease_expires_at = null
            where id = $1`,
          [leased.id],
        ),
      );
      const other = await holdOpen(t.db, (tx) =>
        tx.query('select 1 from courier_deliveries where id = $1 for update', [heldId]),
      );
      // blockedBy gives up after 2 s with nothing blocked: then the replay's answer decides.
      const never = () => new Promise<never>(() => {});
      try {
        const first = await Promise.race([
          replay(),
          blockedBy(t.db, completion.pid).then(() => 'blocked on the completion', never),
          blockedBy(t.db, other.pid).then(() => 'blocked on the other writer', never),
        ]);
        expect(first).toBe(1);
      } finally {
        await completion.commit();
        await other.commit();
      }
      expect(await rowOf(dead)).toMatchObject({ state: 'pending', trigger: 1 });
      expect(await rowOf(held)).toMatchObject({ state: 'failed', trigger: 0 });
      expect(await rowOf(inFlight)).toMatchObject({
        state: 'pending',
        trigger: 0,
        attempts: 1,
        leased: false,
      });
    },
  );

  it.runIf(backend === 'pg')('waits for a resume under way, then makes its deliveries pending', async () => {
    const dead = await send();
    await finish(await claimAll(), { [dead]: 'failed' });
    await t.db.transaction((tx) => holdEndpoint(tx, ep.id, 'paused', null, clock.now()));
    const resume = await holdOpen(t.db, (tx) => resumeEndpoint(tx, ep.id, clock.now(), 0, 1));
    expect(await blockedUntilCommit(t.db, resume, replay)).toBe(1);
    expect((await claimAll()).map((d) => d.messageId)).toEqual([dead]);
  });

  it.runIf(backend === 'pg')('waits for an expunge under way, then passes its message by', async () => {
    const [dead, expunging] = [await send(), await send()];
    await finish(await claimAll(), { [dead]: 'failed', [expunging]: 'failed' });
    const expunge = await holdOpen(t.db, (tx) =>
      expungePayload(tx, { messageId: expunging, now: clock.now() }),
    );
    expect(await blockedUntilCommit(t.db, expunge, replay)).toBe(1);
    expect(await rowOf(expunging)).toMatchObject({ state: 'failed', trigger: 0 });
  });
});
