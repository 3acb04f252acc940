import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.ts';
import { newId } from '../../src/ids.ts';
import { generateSecret } from '../../src/signing/index.ts';
import type { Queryable } from '../../src/store/db.ts';
import { StoreNotFoundError } from '../../src/store/errors.ts';
import { publish } from '../../src/store/publisher.ts';
import { lockAttemptSubjects } from '../../src/store/queries/attempt-subjects.ts';
import { claim } from '../../src/store/queries/claim.ts';
import { complete } from '../../src/store/queries/complete.ts';
import { replayDeadLetters } from '../../src/store/queries/dead-letter.ts';
import { reapExpiredLeases, release } from '../../src/store/queries/unclaim.ts';
import { deleteEndpoint, rotateSecret, updateEndpoint } from '../../src/store/repos/endpoints.ts';
import { BACKENDS, openTestDatabase, type TestDatabase } from '../support/databases.ts';
import {
  deliveredCompletion as delivered,
  emptyTables,
  makeApp,
  makeEndpoint,
  publishJson,
} from '../support/fixtures.ts';
import { blockedBy, holdOpen, listenForWork } from '../support/transactions.ts';

describe.each(BACKENDS)('claiming on %s', (backend) => {
  let t: TestDatabase;
  let clock: ManualClock;
  let appId: string;

  beforeAll(async () => {
    t = await openTestDatabase(backend);
  });
  /** A 429 with an hour's Retry-After from `url`: a streak step and a hold, if `url` is still the endpoint's. */
  const turnedAway = (id: number, url: string) => {
    const base = delivered(id, 1, clock.now());
    return {
      ...base,
      state: 'pending' as const,
      nextAttemptAt: clock.now() + 60_000,
      lastError: 'HTTP 429',
      streak: 'increment' as const,
      holdEndpointUntil: clock.now() + 3_600_000,
      attempt: { ...base.attempt, url, statusCode: 429, decision: 'retry' as const },
    };
  };
  const queueOf = async (endpointId: string) =>
    (
      await t.db.query(
        'select failure_streak, retry_after_until from courier_endpoint_queues where endpoint_id = $1',
        [endpointId],
      )
    ).rows[0];

  it("takes a hold or a streak step only from an attempt to the endpoint's URL as it now is", async () => {
    const ep = await makeEndpoint(t.db, appId, clock.now(), { url: 'http://127.0.0.1:1/old' });
    await publishJson(t.db, appId, clock.now(), { i: 1 });
    await publishJson(t.db, appId, clock.now(), { i: 2 });
    const [first, second] = await claimAs('w');
    // Both requests went to the old URL; the URL changes while they are in flight.
    await updateEndpoint(t.db, ep.id, { ...ep, url: 'http://127.0.0.1:1/new' }, clock.now());
    await complete(t.db, 'w', clock.now(), [turnedAway(first!.id, 'http://127.0.0.1:1/old')], 100);
    expect(await queueOf(ep.id)).toEqual({ failure_streak: 0, retry_after_until: null });
    await complete(t.db, 'w', clock.now(), [turnedAway(second!.id, 'http://127.0.0.1:1/new')], 100);
    expect(await queueOf(ep.id)).toEqual({
      failure_streak: 1,
      retry_after_until: new Date(clock.now() + 3_600_000),
    });
  });

  it.runIf(backend === 'pg')(
    "takes neither from the old URL's answer written while the URL change held the endpoint's queue row",
    async () => {
      const ep = await makeEndpoint(t.db, appId, clock.now(), { url: 'http://127.0.0.1:1/old' });
      await publishJson(t.db, appId, clock.now(), { i: 1 });
      const [d] = await claimAs('w');
      const change = await holdOpen(t.db, (tx) =>
        updateEndpoint(tx, ep.id, { ...ep, url: 'http://127.0.0.1:1/new' }, clock.now()),
      );
      const completing = complete(t.db, 'w', clock.now(), [turnedAway(d!.id, 'http://127.0.0.1:1/old')], 100);
      await blockedBy(t.db, change.pid);
      await change.commit();
      await completing;
      expect(await queueOf(ep.id)).toEqual({ failure_streak: 0, retry_after_until: null });
    },
  );

  it("announces a dead letter whose sibling delivery's completion is written again", async () => {
    await makeEndpoint(t.db, appId, clock.now(), { url: 'http://127.0.0.1:1/a' });
    await makeEndpoint(t.db, appId, clock.now(), { url: 'http://127.0.0.1:1/b' });
    await publishJson(t.db, appId, clock.now(), { i: 1 });
    const [first, second] = await claimAs('w');
    const gone = delivered(second!.id, 1, clock.now());
    const deadLetter = {
      ...gone,
      state: 'failed' as const,
      lastError: 'HTTP 410',
      streak: 'increment' as const,
    };
    // The second's completion committed, its answer lost: it is written again beside the first's.
    await complete(t.db, 'w', clock.now(), [deadLetter], 100);
    const subjects = await lockAttemptSubjects(t.db, 'w', [first!.id, second!.id], clock.now(), [
      deadLetter.attempt.id,
    ]);
    expect(subjects.map((s) => s.deliveryId)).toEqual([first!.id]);
  });

  afterAll(async () => {
    await t.drop();
  });
  beforeEach(async () => {
    clock = new ManualClock(Date.UTC(2026, 0, 1, 12));
    await emptyTables(t.db);
    appId = (await makeApp(t.db, clock.now())).id;
  });

  /** The claim with its next due instant. */
  const claimNext = (owner: string, limit = 100) =>
    claim(t.db, { owner, now: clock.now(), leaseMs: 60_000, limit });
  const claimAs = async (owner: string, limit = 100) => (await claimNext(owner, limit)).deliveries;

  /** The delivery rows `work` updated (HOT among them) and deleted, counted in its transaction. */
  const rowChanges = (work: (tx: Queryable) => Promise<unknown>) =>
    t.db.transaction(async (tx) => {
      // This backend's counts, not yet reported; within one transaction they only grow.
      const counts = async () =>
        (
          await tx.query<{ updated: number; hot: number; deleted: number }>(
            `select pg_stat_get_xact_tuples_updated('courier_deliveries'::regclass)::int as updated,
                    pg_stat_get_xact_tuples_hot_updated('courier_deliveries'::regclass)::int as hot,
                    pg_stat_get_xact_tuples_deleted('courier_deliveries'::regclass)::int as deleted`,
          )
        ).rows[0]!;
      const before = await counts();
      await work(tx);
      const after = await counts();
      return {
        updated: after.updated - before.updated,
        hot: after.hot - before.hot,
        deleted: after.deleted - before.deleted,
      };
    });

  it('hands out the stored bytes exactly, and instants as whole milliseconds', async () => {
    await makeEndpoint(t.db, appId, clock.now(), { url: 'http://127.0.0.1:1/' });
    // Every byte value, and sequences that are not UTF-8: the engine stores what it is given.
    const payload = Buffer.concat([
      Buffer.from(Array.from({ length: 256 }, (_, i) => i)),
      Buffer.from([0xc0, 0xaf, 0xff]),
    ]);
    await publish(t.db, {
      appId,
      messageId: newId('msg', clock.now()),
      eventType: 'invoice.paid',
      eventId: null,
      channels: null,
      payload,
      now: clock.now(),
    });
    // A give-up instant with microseconds, as SQL may write it: handed out as whole milliseconds.
    await t.db.query(`update courier_deliveries set give_up_at = $1::timestamptz + interval '123.987 ms'`, [
      new Date(clock.now()),
    ]);
    const { deliveries, nextDueAt } = await claimNext('w', 1);
    expect(deliveries).toHaveLength(1);
    expect(Buffer.compare(deliveries[0]!.payload, payload)).toBe(0);
    expect(deliveries[0]!.giveUpAt).toBe(clock.now() + 123);
    expect(nextDueAt).toBe(clock.now()); // a full batch: look again at once
    expect((await claimNext('w')).nextDueAt).toBeNull(); // nothing pending anywhere
  });

  it('hands out a rotated-out secret only until its grace period ends, whichever way the clock moves', async () => {
    const [before, after] = [generateSecret(), generateSecret()];
    const t0 = clock.now();
    const ep = await makeEndpoint(t.db, appId, t0, { url: 'http://127.0.0.1:1/' }, before);
    await t.db.transaction((tx) => rotateSecret(tx, ep.id, after, 60_000, t0));
    for (let i = 0; i < 4; i++) await publishJson(t.db, appId, t0, { i });

    const secretsAt = async (at: number) => {
      clock.set(at);
      const [delivery] = await claimAs('w', 1);
      return delivery!.secrets;
    };
    expect(await secretsAt(t0)).toEqual([after, before]);
    expect(await secretsAt(t0 + 59_999)).toEqual([after, before]);
    expect(await secretsAt(t0 + 60_000)).toEqual([after]);
    expect(await secretsAt(t0 + 30_000)).toEqual([after, before]);
  });

  it('never hands out more than an endpoint in-flight cap, whoever asks', async () => {
    await makeEndpoint(t.db, appId, clock.now(), { url: 'http://127.0.0.1:1/', maxInFlight: 3 });
    for (let i = 0; i < 10; i++) await publishJson(t.db, appId, clock.now(), { i });

    const first = await claimAs('worker-a');
    expect(first).toHaveLength(3);
    expect(await claimAs('worker-b')).toHaveLength(0);

    // Completing one frees one slot, for any worker.
    await complete(t.db, 'worker-a', clock.now(), [delivered(first[0]!.id, 1, clock.now())], 100);
    const next = await claimAs('worker-b');
    expect(next).toHaveLength(1);
    expect(next[0]!.id).not.toBe(first[0]!.id);
  });

  it('hands a claim out in delivery-id order, each with its own payload and endpoint, and counts every endpoint it visits', async () => {
    // Three endpoints with work due under different caps, and one that looks due but has nothing
    // due yet: the claim visits it and takes nothing from it.
    const endpoints = [];
    for (const [i, maxInFlight] of [2, 5, 50, 50].entries())
      endpoints.push(
        await makeEndpoint(t.db, appId, clock.now(), { url: `http://127.0.0.1:1/ep${i}`, maxInFlight }),
      );
    for (let i = 0; i < 10; i++) await publishJson(t.db, appId, clock.now(), { i });
    const idle = endpoints[3]!;
    const later = clock.now() + 60_000;
    await t.db.query('update courier_deliveries set next_attempt_at = $2 where endpoint_id = $1', [
      idle.id,
      new Date(later),
    ]);

    const claimed = await claimAs('worker-a');
    const ids = claimed.map((d) => d.id);
    expect(ids).toEqual([...ids].sort((a, b) => a - b));
    const { rows: messages } = await t.db.query<{ id: string; body: string }>(
      `select id, convert_from(payload, 'UTF8') as body from courier_messages`,
    );
    const bodies = new Map(messages.map((m) => [m.id, m.body]));
    for (const d of claimed) {
      expect(d.payload.toString()).toBe(bodies.get(d.messageId));
      expect(d.url).toBe(endpoints.find((e) => e.id === d.endpointId)!.url);
    }

    const perEndpoint = endpoints.map((e) => claimed.filter((d) => d.endpointId === e.id).length);
    expect(perEndpoint).toEqual([2, 5, 10, 0]);
    const { rows } = await t.db.query<{
      endpoint_id: string;
      in_flight: number;
      next_due_at: Date;
      rl_slot: string;
    }>('select endpoint_id, in_flight, next_due_at, rl_slot from courier_endpoint_queues');
    const queue = (id: string) => rows.find((r) => r.endpoint_id === id)!;
    expect(endpoints.map((e) => queue(e.id).in_flight)).toEqual(perEndpoint);
    // Visited with nothing claimed, it still moves on: due when its deliveries are, its rate
    // window brought up to this claim's 100 ms slot.
    expect(queue(idle.id).next_due_at.getTime()).toBe(later);
    expect(Number(queue(idle.id).rl_slot)).toBe(Math.floor(clock.now() / 100));
  });

  it('keeps any 1.2 s window of claims within the rate limit', async () => {
    await makeEndpoint(t.db, appId, clock.now(), {
      url: 'http://127.0.0.1:1/',
      rateLimit: 5,
      maxInFlight: 100,
    });
    for (let i = 0; i < 20; i++) await publishJson(t.db, appId, clock.now(), { i });

    const claimedAt: number[] = [];
    for (let step = 0; step < 60; step++) {
      const batch = await claimAs('w');
      claimedAt.push(...batch.map(() => clock.now()));
      await complete(
        t.db,
        'w',
        clock.now(),
        batch.map((d) => delivered(d.id, 1, clock.now())),
        100,
      );
      clock.advance(100);
    }
    expect(claimedAt).toHaveLength(20);
    for (const start of claimedAt) {
      const inWindow = claimedAt.filter((at) => at >= start && at < start + 1_200).length;
      expect(inWindow).toBeLessThanOrEqual(5);
    }
    // And it is a limit, not a stall: 20 deliveries at 5 per 1.2 s finish in under 6 s.
    expect(claimedAt.at(-1)! - claimedAt[0]!).toBeLessThan(6_000);
  });

  it('claims nothing scheduled for later, and reports when it is due', async () => {
    const ep = await makeEndpoint(t.db, appId, clock.now(), { url: 'http://127.0.0.1:1/' });
    await publishJson(t.db, appId, clock.now(), { i: 1 });
    const [d] = await claimAs('w');
    const retryAt = clock.now() + 90_000;
    await complete(
      t.db,
      'w',
      clock.now(),
      [{ ...delivered(d!.id, 1, clock.now()), state: 'pending', nextAttemptAt: retryAt }],
      100,
    );
    // The claim took all that was pending, so only the retry makes the endpoint due again.
    expect(await claimNext('w')).toEqual({
      deliveries: [],
      nextDueAt: retryAt,
      unreadable: [],
      expired: [],
      skippedSecrets: [],
    });
    clock.advance(90_000);
    const [again] = await claimAs('w');
    expect(again).toMatchObject({ id: d!.id, attempts: 1, endpointId: ep.id });
  });

  it('says when to claim next: at once after a full batch, never while nothing is pending', async () => {
    await makeEndpoint(t.db, appId, clock.now(), { url: 'http://127.0.0.1:1/' });
    for (let i = 0; i < 3; i++) await publishJson(t.db, appId, clock.now(), { i });
    const full = await claimNext('w', 2);
    expect(full.deliveries).toHaveLength(2);
    expect(full.nextDueAt).toBe(clock.now());
    const rest = await claimNext('w', 2);
    expect(rest.deliveries).toHaveLength(1);
    expect(rest.nextDueAt).toBeNull();
    expect(await claimNext('w')).toEqual({
      deliveries: [],
      nextDueAt: null,
      unreadable: [],
      expired: [],
      skippedSecrets: [],
    });
  });

  it.skipIf(backend === 'pglite')(
    'finds a delivery whose publish was still committing while a claim drained its endpoint',
    async () => {
      const ep = await makeEndpoint(t.db, appId, clock.now(), { url: 'http://127.0.0.1:1/' });
      await publishJson(t.db, appId, clock.now(), { i: 1 });
      await publishJson(t.db, appId, clock.now(), { i: 2 });
      expect(await claimAs('w', 1)).toHaveLength(1);
      // The endpoint is still due (one delivery pending), so this publish needs no update of its
      // queue row, only its KEY SHARE lock. Held open, its delivery is invisible to the claim
      // below, which must therefore leave the endpoint alone rather than take the one it can see
      // and conclude nothing is pending (that would strand the new delivery).
      const publishing = await holdOpen(t.db, (tx) => publishJson(tx, appId, clock.now(), { i: 3 }));
      // Skipped, the endpoint still reads as due: the worker looks again soon instead of sleeping.
      expect(await claimNext('w')).toEqual({
        deliveries: [],
        nextDueAt: clock.now(),
        unreadable: [],
        expired: [],
        skippedSecrets: [],
      });
      await publishing.commit();
      const after = await claimNext('w');
      expect(after.deliveries).toMatchObject([
        { endpointId: ep.id, attempts: 0 },
        { endpointId: ep.id, attempts: 0 },
      ]);
      expect(after.nextDueAt).toBeNull();
    },
  );

  it('records what the receiver answered byte for byte, whatever characters it holds', async () => {
    await makeEndpoint(t.db, appId, clock.now(), { url: 'http://127.0.0.1:1/' });
    await publishJson(t.db, appId, clock.now(), { i: 1 });
    await publishJson(t.db, appId, clock.now(), { i: 2 });
    const [a, b] = await claimAs('w');
    const nasty = `{"a":"b\\"c"}, NULL, {x,y} 'q' \\ \u00e9\u{1F600}\ttab\nline`;
    const headers = { 'x-quote': 'say "hi", \\ back', 'x-null': 'NULL', 'x-brace': '{1,2}' };
    const first = delivered(a!.id, 1, clock.now());
    const second = delivered(b!.id, 1, clock.now());
    await complete(
      t.db,
      'w',
      clock.now(),
      [
        {
          ...first,
          attempt: { ...first.attempt, responseBody: `${nasty}\u0000end`, responseHeaders: headers },
        },
        {
          ...second,
          state: 'pending',
          nextAttemptAt: clock.now() + 1_000,
          lastError: nasty,
          attempt: { ...second.attempt, statusCode: 500, decision: 'retry', detail: nasty, reason: 'NULL' },
        },
      ],
      100,
    );
    const { rows } = await t.db.query<{
      response_body: string | null;
      response_headers: unknown;
      detail: string;
      reason: string | null;
    }>('select response_body, response_headers, detail, reason from courier_attempts order by delivery_id');
    expect(rows).toEqual([
      { response_body: `${nasty}\uFFFDend`, response_headers: headers, detail: 'ok', reason: null },
      { response_body: null, response_headers: null, detail: nasty, reason: 'NULL' },
    ]);
    const { rows: deliveries } = await t.db.query<{ last_error: string | null }>(
      'select last_error from courier_delivery_states order by id',
    );
    expect(deliveries).toEqual([{ last_error: null }, { last_error: nasty }]);
  });

  it('gives a released delivery back with the same attempt count and due time', async () => {
    await makeEndpoint(t.db, appId, clock.now(), { url: 'http://127.0.0.1:1/' });
    await publishJson(t.db, appId, clock.now(), { i: 1 });
    const [d] = await claimAs('w');
    const before = await t.db.query('select attempts, next_attempt_at from courier_deliveries');
    expect(await release(t.db, 'w', [d!], clock.now())).toEqual({ released: 1, busy: [] });
    const after = await t.db.query('select attempts, next_attempt_at, state from courier_deliveries');
    expect(after.rows[0]).toMatchObject({ ...before.rows[0], state: 'pending' });
    expect(await claimAs('other')).toHaveLength(1);
  });

  it('gives back only the lease named, and names one it passed by as busy', async () => {
    await makeEndpoint(t.db, appId, clock.now(), { url: 'http://127.0.0.1:1/' });
    await publishJson(t.db, appId, clock.now(), { i: 1 });
    const [first] = await claimAs('w');
    expect(await reapExpiredLeases(t.db, clock.now() + 61_000)).toBe(1);
    clock.advance(1);
    const [again] = await claimAs('w');
    // A give-back queued for the first claim does not end the second.
    expect(await release(t.db, 'w', [first!], clock.now())).toEqual({ released: 0, busy: [] });
    expect(await claimAs('other')).toHaveLength(0);
    expect(await release(t.db, 'w', [again!], clock.now())).toEqual({ released: 1, busy: [] });
    expect(await claimAs('other')).toHaveLength(1);
  });

  it('refuses to replay the dead letters of an endpoint deleted meanwhile', async () => {
    const ep = await makeEndpoint(t.db, appId, clock.now(), { url: 'http://127.0.0.1:1/' });
    await publishJson(t.db, appId, clock.now(), { i: 1 });
    const [d] = await claimAs('w');
    // Deleted while its attempt was under way: the attempt ends in a dead letter after the deletion.
    await t.db.transaction((tx) => deleteEndpoint(tx, ep.id, clock.now()));
    const gone = delivered(d!.id, 1, clock.now());
    const deadLetter = {
      ...gone,
      state: 'failed' as const,
      lastError: 'HTTP 410',
      streak: 'increment' as const,
    };
    await complete(t.db, 'w', clock.now(), [deadLetter], 100);
    await expect(replayDeadLetters(t.db, { endpointId: ep.id }, clock.now())).rejects.toThrow(
      StoreNotFoundError,
    );
    const { rows } = await t.db.query('select state from courier_deliveries where id = $1', [d!.id]);
    expect(rows).toEqual([{ state: 'failed' }]);
  });

  it('takes a dead letter written again after a replay as a give-back: the replay stands, and it is not announced again', async () => {
    await makeEndpoint(t.db, appId, clock.now(), { url: 'http://127.0.0.1:1/' });
    await publishJson(t.db, appId, clock.now(), { i: 1 });
    const [d] = await claimAs('w');
    const gone = delivered(d!.id, 1, clock.now());
    const deadLetter = {
      ...gone,
      state: 'failed' as const,
      lastError: 'HTTP 410',
      streak: 'increment' as const,
      attempt: { ...gone.attempt, statusCode: 410, decision: 'failed' as const },
    };
    await complete(t.db, 'w', clock.now(), [deadLetter], 100);
    // Its answer lost; meanwhile an operator replays it, and the same worker claims it again.
    expect(
      await replayDeadLetters(t.db, { endpointId: d!.endpointId, deliveryIds: [d!.id] }, clock.now()),
    ).toMatchObject({ replayed: 1 });
    expect((await claimAs('w')).map((c) => c.id)).toEqual([d!.id]);
    const again = { ...deadLetter, messageId: d!.messageId, rewrite: true };
    expect(await lockAttemptSubjects(t.db, 'w', [d!.id], clock.now(), [again.attempt.id])).toEqual([]);
    await complete(t.db, 'w', clock.now(), [again], 100);
    const { rows } = await t.db.query(
      `select (select count(*)::int from courier_attempts) as attempts, d.state, d.attempts as made,
              d.trigger, d.lease_owner
         from courier_deliveries d`,
    );
    expect(rows).toEqual([{ attempts: 1, state: 'pending', made: 0, trigger: 1, lease_owner: null }]);
  });

  it.skipIf(backend === 'pglite')(
    'names a lease it passed by, its row held by another transaction, as busy',
    async () => {
      await makeEndpoint(t.db, appId, clock.now(), { url: 'http://127.0.0.1:1/' });
      await publishJson(t.db, appId, clock.now(), { i: 1 });
      const [d] = await claimAs('w');
      // A resend or an expunge holds it for a moment: still leased to w, to be given back again.
      const locked = await holdOpen(t.db, (tx) =>
        tx.query('select 1 from courier_deliveries where id = $1 for update', [d!.id]),
      );
      try {
        expect(await release(t.db, 'w', [d!], clock.now())).toEqual({ released: 0, busy: [d!.id] });
      } finally {
        await locked.commit();
      }
      expect(await release(t.db, 'w', [d!], clock.now())).toEqual({ released: 1, busy: [] });
    },
  );

  it('takes a completion written again after its commit went unheard, its delivery claimed again, once', async () => {
    await makeEndpoint(t.db, appId, clock.now(), { url: 'http://127.0.0.1:1/' });
    await publishJson(t.db, appId, clock.now(), { i: 1 });
    const [d] = await claimAs('w');
    const notFound = delivered(d!.id, 1, clock.now());
    const retry = {
      ...notFound,
      state: 'pending' as const,
      nextAttemptAt: clock.now() + 1_000,
      streak: 'increment' as const,
      attempt: { ...notFound.attempt, statusCode: 404, decision: 'retry' as const, delayMs: 1_000 },
    };
    await complete(t.db, 'w', clock.now(), [retry], 100);
    clock.advance(1_000);
    expect((await claimAs('w')).map((c) => c.id)).toEqual([d!.id]);
    // Written again: it ends the new lease, with one attempt and one step of the streak.
    await complete(t.db, 'w', clock.now(), [{ ...retry, messageId: d!.messageId, rewrite: true }], 100);
    const { rows } = await t.db.query(
      `select (select count(*)::int from courier_attempts) as attempts, d.state, d.lease_owner, q.in_flight,
              q.failure_streak
         from courier_deliveries d join courier_endpoint_queues q using (endpoint_id)`,
    );
    expect(rows).toEqual([
      { attempts: 1, state: 'pending', lease_owner: null, in_flight: 0, failure_streak: 1 },
    ]);
  });

  it('takes over deliveries of a worker whose lease expired, and ignores its late completion', async () => {
    await makeEndpoint(t.db, appId, clock.now(), { url: 'http://127.0.0.1:1/', maxInFlight: 1 });
    await publishJson(t.db, appId, clock.now(), { i: 1 });
    const [d] = await claimAs('dead-worker');
    clock.advance(59_000);
    expect(await reapExpiredLeases(t.db, clock.now())).toBe(0);
    clock.advance(1_000);
    expect(await reapExpiredLeases(t.db, clock.now())).toBe(1);
    const [taken] = await claimAs('live-worker');
    expect(taken).toMatchObject({ id: d!.id, attempts: 0 });
    // The dead worker's completion arrives late: it no longer owns the lease, so nothing is counted.
    await complete(t.db, 'dead-worker', clock.now(), [delivered(d!.id, 1, clock.now())], 100);
    const { rows } = await t.db.query<{ n: number }>('select count(*)::int as n from courier_attempts');
    expect(rows[0]!.n).toBe(0);
    await complete(t.db, 'live-worker', clock.now(), [delivered(d!.id, 1, clock.now())], 100);
    const { rows: after } = await t.db.query('select state, attempts from courier_delivery_states');
    expect(after).toEqual([{ state: 'delivered', attempts: 1 }]);
  });

  it('finds expired leases behind a deep due backlog, and only those, two workers at a time', async () => {
    await makeEndpoint(t.db, appId, clock.now(), { url: 'http://127.0.0.1:1/', maxInFlight: 3 });
    for (let i = 0; i < 40; i++) {
      await publishJson(t.db, appId, clock.now(), { i });
      clock.advance(1); // due in publish order
    }
    const dead = await claimAs('dead-worker', 2);
    clock.advance(30_000);
    const live = await claimAs('live-worker');
    expect(live).toHaveLength(1); // the cap: 2 + 1
    clock.advance(30_000); // the dead worker's leases run out; the live one's has 30 s to go
    expect(await reapExpiredLeases(t.db, clock.now())).toBe(2);
    expect(await reapExpiredLeases(t.db, clock.now())).toBe(0);
    const again = await claimAs('live-worker');
    expect(again.map((d) => d.id)).toEqual(dead.map((d) => d.id));
    expect(again.map((d) => d.attempts)).toEqual([0, 0]);
  });

  it('rewrites a claimed delivery in place (HOT): a claim adds no index entries', async () => {
    await makeEndpoint(t.db, appId, clock.now(), { url: 'http://127.0.0.1:1/' });
    for (let i = 0; i < 5; i++) await publishJson(t.db, appId, clock.now(), { i });
    const changes = await rowChanges(async (tx) => {
      const { deliveries } = await claim(tx, { owner: 'w', now: clock.now(), leaseMs: 60_000, limit: 100 });
      expect(deliveries).toHaveLength(5);
    });
    expect(changes).toMatchObject({ updated: 5, hot: 5 });
  });

  it('deletes a delivered delivery instead of rewriting it; its attempt is the record', async () => {
    const ep = await makeEndpoint(t.db, appId, clock.now(), { url: 'http://127.0.0.1:1/' });
    await publishJson(t.db, appId, clock.now(), { i: 1 });
    await publishJson(t.db, appId, clock.now(), { i: 2 });
    const [a, b] = await claimAs('w');
    const done = delivered(a!.id, 1, clock.now());
    const failed = delivered(b!.id, 1, clock.now());
    const retry = {
      ...failed,
      state: 'pending' as const,
      nextAttemptAt: clock.now() + 5_000,
      attempt: { ...failed.attempt, statusCode: 503, decision: 'retry' as const },
    };
    const changes = await rowChanges((tx) => complete(tx, 'w', clock.now(), [done, retry], 100));
    expect(changes).toMatchObject({ updated: 1, deleted: 1 });
    const { rows: queued } = await t.db.query('select id, state from courier_deliveries');
    expect(queued).toEqual([{ id: b!.id, state: 'pending' }]);
    const { rows: states } = await t.db.query(
      'select id, endpoint_id, state, attempts, trigger from courier_delivery_states order by id',
    );
    expect(states).toEqual([
      { id: a!.id, endpoint_id: ep.id, state: 'delivered', attempts: 1, trigger: 0 },
      { id: b!.id, endpoint_id: ep.id, state: 'pending', attempts: 1, trigger: 0 },
    ]);
  });

  it('serves a healthy endpoint while another has a deep backlog (no head-of-line blocking)', async () => {
    const slow = await makeEndpoint(t.db, appId, clock.now(), {
      url: 'http://127.0.0.1:1/',
      maxInFlight: 2,
      eventTypes: ['bulk'],
    });
    const fast = await makeEndpoint(t.db, appId, clock.now(), {
      url: 'http://127.0.0.1:2/',
      eventTypes: ['urgent'],
    });
    for (let i = 0; i < 300; i++) await publishJson(t.db, appId, clock.now(), { i }, { eventType: 'bulk' });
    clock.advance(1);
    await publishJson(t.db, appId, clock.now(), { urgent: true }, { eventType: 'urgent' });
    const batch = await claimAs('w', 10);
    expect(batch.filter((d) => d.endpointId === slow.id)).toHaveLength(2);
    expect(batch.filter((d) => d.endpointId === fast.id)).toHaveLength(1);
  });

  it.skipIf(backend === 'pglite')(
    'leaves the endpoints a claim takes nothing from unlocked, for other workers while it commits',
    async () => {
      const eps = [];
      for (let i = 0; i < 3; i++) {
        eps.push(
          await makeEndpoint(t.db, appId, clock.now(), {
            url: `http://127.0.0.1:${i + 1}/`,
            maxInFlight: 5,
            eventTypes: [`e${i}`],
          }),
        );
        clock.advance(1); // due in endpoint order
        for (let j = 0; j < 5; j++)
          await publishJson(t.db, appId, clock.now(), { j }, { eventType: `e${i}` });
      }
      let first: Awaited<ReturnType<typeof claimAs>> = [];
      const claiming = await holdOpen(t.db, async (tx) => {
        first = (await claim(tx, { owner: 'a', now: clock.now(), leaseMs: 60_000, limit: 5 })).deliveries;
      });
      // The first claim's batch went to the first endpoint; the other two stay claimable meanwhile.
      const second = await claimAs('b');
      await claiming.commit();
      expect(first.map((d) => d.endpointId)).toEqual(Array(5).fill(eps[0]!.id));
      expect(new Set(second.map((d) => d.endpointId))).toEqual(new Set([eps[1]!.id, eps[2]!.id]));
      expect(second).toHaveLength(10);
    },
  );

  it('says when a completion freed capacity for due work, so the worker knows to claim again', async () => {
    await makeEndpoint(t.db, appId, clock.now(), { url: 'http://127.0.0.1:1/', maxInFlight: 1 });
    await publishJson(t.db, appId, clock.now(), { i: 1 });
    await publishJson(t.db, appId, clock.now(), { i: 2 });
    const [first] = await claimAs('w');
    expect(await claimAs('w')).toHaveLength(0); // at its cap
    const freed = await complete(t.db, 'w', clock.now(), [delivered(first!.id, 1, clock.now())], 100);
    expect(freed).toEqual({ alarms: [], failing: [], claimable: true, wakeAt: null });
    const [second] = await claimAs('w');
    const last = await complete(t.db, 'w', clock.now(), [delivered(second!.id, 1, clock.now())], 100);
    expect(last).toEqual({ alarms: [], failing: [], claimable: false, wakeAt: null });
  });

  it('says when work falls due later on an endpoint a completion freed room on', async () => {
    // At its cap, the endpoint is left out of every claim's next due time; its next delivery is due
    // in a minute, so only the completion that frees its slot can say when to look again.
    const ep = await makeEndpoint(t.db, appId, clock.now(), { url: 'http://127.0.0.1:1/', maxInFlight: 1 });
    await publishJson(t.db, appId, clock.now(), { i: 1 });
    await publishJson(t.db, appId, clock.now(), { i: 2 });
    const [first] = await claimAs('w');
    const later = new Date(clock.now() + 60_000);
    await t.db.query(
      'update courier_deliveries set next_attempt_at = $3 where endpoint_id = $1 and id <> $2',
      [ep.id, first!.id, later],
    );
    await t.db.query('update courier_endpoint_queues set next_due_at = $2 where endpoint_id = $1', [
      ep.id,
      later,
    ]);
    const freed = await complete(t.db, 'w', clock.now(), [delivered(first!.id, 1, clock.now())], 100);
    expect(freed).toEqual({ alarms: [], failing: [], claimable: false, wakeAt: clock.now() + 60_000 });
  });

  it('keeps the claim function of the previous release working: its columns, deliveries only', async () => {
    await makeEndpoint(t.db, appId, clock.now(), { url: 'http://127.0.0.1:1/' });
    const previousClaim = () =>
      t.db.query<Record<string, unknown>>('select * from courier_claim($1, $2, $3, $4)', [
        'old-worker',
        new Date(clock.now()),
        60_000,
        100,
      ]);
    expect((await previousClaim()).rows).toEqual([]);
    await publishJson(t.db, appId, clock.now(), { i: 1 });
    await publishJson(t.db, appId, clock.now(), { i: 2 });
    const { rows } = await previousClaim();
    expect(rows).toHaveLength(2);
    expect(Object.keys(rows[0]!)).toEqual([
      'delivery_id',
      'message_id',
      'endpoint_id',
      'attempts',
      'give_up_at',
      'trigger',
      'event_type',
      'payload',
      'endpoint_version',
      'app_version',
    ]);
    expect(await claimAs('new-worker')).toHaveLength(0);
  });

  it('keeps the completion functions of the previous release working, on its objects of named fields', async () => {
    const ep = await makeEndpoint(t.db, appId, clock.now(), { url: 'http://127.0.0.1:1/' });
    await makeEndpoint(t.db, appId, clock.now(), { url: 'http://127.0.0.1:2/' }); // a healthy one
    for (let i = 0; i < 4; i++) await publishJson(t.db, appId, clock.now(), { i });
    const batch = await claimAs('w');
    expect(batch).toHaveLength(8);
    const items = batch.map((d, seq) => {
      const c =
        d.endpointId === ep.id
          ? { ...delivered(d.id, 1, clock.now()), state: 'failed' as const, streak: 'increment' as const }
          : delivered(d.id, 1, clock.now());
      const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());
      // What the previous release's complete() sent (0006's courier_complete_batch input).
      return {
        seq,
        delivery_id: c.deliveryId,
        state: c.state,
        attempts: c.attempts,
        next_attempt_at: iso(c.nextAttemptAt),
        give_up_at: iso(c.giveUpAt),
        last_error: c.lastError,
        streak: c.streak,
        attempt_id: c.attempt.id,
        number: c.attempt.number,
        trigger: c.attempt.trigger,
        url: c.attempt.url,
        started_at: iso(c.attempt.startedAt),
        duration_ms: c.attempt.durationMs,
        status_code: c.attempt.statusCode,
        failure_kind: c.attempt.failureKind,
        response_headers: c.attempt.responseHeaders,
        response_body: c.attempt.responseBody,
        decision: c.attempt.decision,
        delay_ms: c.attempt.delayMs,
        reason: c.attempt.reason,
        detail: c.attempt.detail,
      };
    });
    const [first, second] = [items.slice(0, 4), items.slice(4)];
    // courier_complete answers the alarms only: the previous release reads every row as one.
    const { rows } = await t.db.query('select * from courier_complete($1, $2, $3, $4)', [
      'w',
      new Date(clock.now()),
      JSON.stringify(first),
      2,
    ]);
    const failedFirst = first.filter((i) => i.state === 'failed').length;
    expect(rows).toEqual(failedFirst >= 2 ? [{ endpoint_id: ep.id, failure_streak: failedFirst }] : []);
    const batchRows = await t.db.query<{ endpoint_id: string; failure_streak: number; alarm: boolean }>(
      'select endpoint_id, failure_streak, alarm from courier_complete_batch($1, $2, $3, $4) order by alarm desc',
      ['w', new Date(clock.now()), JSON.stringify(second), 4],
    );
    expect(batchRows.rows[0]).toEqual({ endpoint_id: ep.id, failure_streak: 4, alarm: true });
    // Their attempts are recorded as the new path records them, times included.
    const attempts = await t.db.query<{ id: string; started_at: Date; decision: string }>(
      'select id, started_at, decision from courier_attempts order by id',
    );
    expect(attempts.rows).toHaveLength(8);
    for (const a of attempts.rows) {
      const item = items.find((i) => i.attempt_id === a.id)!;
      expect(a.started_at.toISOString()).toBe(item.started_at);
      expect(a.decision).toBe(item.decision);
    }
  });

  it('wakes the workers when a raised cap makes held-back deliveries claimable', async () => {
    const ep = await makeEndpoint(t.db, appId, clock.now(), { url: 'http://127.0.0.1:1/', maxInFlight: 1 });
    await publishJson(t.db, appId, clock.now(), { i: 1 });
    await publishJson(t.db, appId, clock.now(), { i: 2 });
    const capped = await claimNext('w');
    expect(capped.deliveries).toHaveLength(1);
    expect(capped.nextDueAt).toBeNull(); // capped: no timer can bring it, only a completion
    const workers = await listenForWork(t.db);
    try {
      await t.db.transaction((tx) =>
        updateEndpoint(tx, ep.id, { url: ep.url, rateLimit: 1000, maxInFlight: 2 }, clock.now()),
      );
      expect(await workers.heard(1)).toBe(1);
      expect(await claimAs('w')).toHaveLength(1);
    } finally {
      await workers.stop();
    }
  });

  it('counts a permanent-failure streak and reports the endpoint once it reaches the threshold', async () => {
    const ep = await makeEndpoint(t.db, appId, clock.now(), { url: 'http://127.0.0.1:1/' });
    for (let i = 0; i < 3; i++) await publishJson(t.db, appId, clock.now(), { i });
    const batch = await claimAs('w');
    const failed = batch.map((d) => ({
      ...delivered(d.id, 1, clock.now()),
      state: 'failed' as const,
      streak: 'increment' as const,
    }));
    const outcome = await complete(t.db, 'w', clock.now(), failed, 3);
    expect(outcome.alarms).toEqual([{ endpointId: ep.id, failureStreak: 3 }]);
  });
});
