import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.ts';
import { claim } from '../../src/store/queries/claim.ts';
import { complete } from '../../src/store/queries/complete.ts';
import { releaseHostHolds } from '../../src/store/queries/host-holds.ts';
import { updateEndpoint } from '../../src/store/repos/endpoints.ts';
import { BACKENDS, openTestDatabase, type TestDatabase } from '../support/databases.ts';
import {
  deliveredCompletion as delivered,
  emptyTables,
  makeApp,
  makeEndpoint,
  publishJson,
} from '../support/fixtures.ts';
import { holdOpen } from '../support/transactions.ts';

/** The in-flight cap per receiving host (migration 0030): claims across a host's endpoints. */
describe.each(BACKENDS)('the per-host in-flight cap on %s', (backend) => {
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

  const claimWith = (hostCap: number, owner = 'w', limit = 100) =>
    claim(t.db, { owner, now: clock.now(), leaseMs: 60_000, limit, hostCap });
  const endpoints = (...urls: string[]) =>
    Promise.all(urls.map((url) => makeEndpoint(t.db, appId, clock.now(), { url, maxInFlight: 10 })));
  /** `n` messages, each delivered to every endpoint. */
  const publishMany = async (n: number) => {
    for (let i = 0; i < n; i++) await publishJson(t.db, appId, clock.now(), { i });
  };
  const inFlightOf = async (id: string) =>
    (
      await t.db.query<{ in_flight: number }>(
        'select in_flight from courier_endpoint_queues where endpoint_id = $1',
        [id],
      )
    ).rows[0]!.in_flight;

  it("shares the cap among a host's endpoints, across workers, and holds the rest back without making them due at once", async () => {
    const eps = await endpoints('http://127.0.0.1:1/a', 'http://127.0.0.1:1/b', 'http://127.0.0.1:1/c');
    await publishMany(5);

    const first = await claimWith(4, 'worker-a');
    expect(first.deliveries).toHaveLength(4);
    // The host is full: another worker gets nothing, and is told to look again in 500 ms, not now.
    const second = await claimWith(4, 'worker-b');
    expect(second.deliveries).toHaveLength(0);
    expect(second.nextDueAt).toBe(clock.now() + 500);
    const counts = await Promise.all(eps.map((e) => inFlightOf(e.id)));
    expect(counts.reduce((a, b) => a + b)).toBe(4);

    // Two slots freed; once the hold is over, two more go out.
    await complete(
      t.db,
      'worker-a',
      clock.now(),
      first.deliveries.slice(0, 2).map((d) => delivered(d.id, 1, clock.now())),
      100,
    );
    clock.advance(500);
    expect((await claimWith(4, 'worker-b')).deliveries).toHaveLength(2);
    expect((await claimWith(4, 'worker-b')).deliveries).toHaveLength(0);
  });

  /** Endpoints on port 1 and one on port 2; the first reached on port 1 takes the host's 3 slots. */
  const fillHost = async (onPort1: number) => {
    await endpoints(...Array.from({ length: onPort1 }, (_, i) => `http://127.0.0.1:1/ep${i}`));
    const [elsewhere] = await endpoints('http://127.0.0.1:2/');
    await publishMany(3);
    const first = await claimWith(3);
    const took = first.deliveries.find((d) => d.url.startsWith('http://127.0.0.1:1/'))!.endpointId;
    const { rows } = await t.db.query<{ endpoint_id: string }>(
      'select endpoint_id from courier_endpoint_queues where host_held_until is not null order by endpoint_id',
    );
    const freeSlots = async (n: number) => {
      const mine = first.deliveries.filter((d) => d.endpointId === took).slice(0, n);
      await complete(
        t.db,
        'w',
        clock.now(),
        mine.map((d) => delivered(d.id, 1, clock.now())),
        100,
      );
    };
    return { elsewhere: elsewhere!.id, took, held: rows.map((r) => r.endpoint_id), freeSlots };
  };
  const holdsOf = async () =>
    (
      await t.db.query<{ endpoint_id: string; blocked_until: Date | null; host_held_until: Date | null }>(
        'select endpoint_id, blocked_until, host_held_until from courier_endpoint_queues order by endpoint_id',
      )
    ).rows;

  it('ends the holds on a host whose slots were freed, but not one a Retry-After or rate limit also holds', async () => {
    const { elsewhere, took, held, freeSlots } = await fillHost(4);
    expect(held).toHaveLength(3);
    const [lengthened, waiting, plain] = held;
    const hour = new Date(clock.now() + 3_600_000);
    // Since held: one for an hour (as a rate limit or a Retry-After sets blocked_until); one asked
    // by a Retry-After for 100 ms, within the host's hold (blocked_until stays the hold's).
    await t.db.query('update courier_endpoint_queues set blocked_until = $2 where endpoint_id = $1', [
      lengthened,
      hour,
    ]);
    await t.db.query('update courier_endpoint_queues set retry_after_until = $2 where endpoint_id = $1', [
      waiting,
      new Date(clock.now() + 100),
    ]);
    await freeSlots(2);

    expect(await releaseHostHolds(t.db, [elsewhere], 2, clock.now())).toBe(false);
    expect(await releaseHostHolds(t.db, [took], 2, clock.now())).toBe(true);
    const after = new Map((await holdsOf()).map((r) => [r.endpoint_id, r]));
    expect(after.get(lengthened!)).toMatchObject({ blocked_until: hour });
    expect(after.get(waiting!)!.host_held_until).not.toBeNull();
    expect(after.get(plain!)).toMatchObject({ blocked_until: null, host_held_until: null });
    // At once, without waiting out the hold.
    expect((await claimWith(3)).deliveries.map((d) => d.endpointId)).toEqual([plain, plain]);
  });

  it('ends one hold per slot freed, the longest due first', async () => {
    const { took, held, freeSlots } = await fillHost(4);
    const [, , soonest] = held;
    await t.db.query('update courier_endpoint_queues set next_due_at = $2 where endpoint_id = $1', [
      soonest,
      new Date(clock.now() - 1_000),
    ]);
    await freeSlots(1);
    expect(await releaseHostHolds(t.db, [took], 1, clock.now())).toBe(true);
    const ended = (await holdsOf()).filter((r) => held.includes(r.endpoint_id) && r.host_held_until === null);
    expect(ended.map((r) => r.endpoint_id)).toEqual([soonest]);
  });

  it('counts each host on its own, a port making another host', async () => {
    await endpoints(
      'http://127.0.0.1:1/a',
      'http://127.0.0.1:1/b',
      'http://127.0.0.1:2/a',
      'http://127.0.0.1:2/b',
    );
    await publishMany(5);
    const { deliveries } = await claimWith(3);
    const byHost = (port: string) =>
      deliveries.filter((d) => d.url.startsWith(`http://127.0.0.1:${port}/`)).length;
    expect([byHost('1'), byHost('2')]).toEqual([3, 3]);
  });

  it("caps nothing beyond each endpoint's own cap when it is 0", async () => {
    await endpoints('http://127.0.0.1:1/a', 'http://127.0.0.1:1/b', 'http://127.0.0.1:1/c');
    await publishMany(12);
    expect((await claimWith(0)).deliveries).toHaveLength(30);
  });

  it('counts against the host only what an endpoint has due, leaving the rest to the next endpoint', async () => {
    const [few, many] = await endpoints('http://127.0.0.1:1/few', 'http://127.0.0.1:1/many');
    await publishMany(6);
    // Only one of the few endpoint's deliveries is due; it comes first in the claim.
    await t.db.query(
      `update courier_deliveries set next_attempt_at = $2
       where endpoint_id = $1 and id <> (select min(id) from courier_deliveries where endpoint_id = $1)`,
      [few!.id, new Date(clock.now() + 60_000)],
    );
    await t.db.query('update courier_endpoint_queues set next_due_at = $2 where endpoint_id = $1', [
      many!.id,
      new Date(clock.now() + 1),
    ]);
    clock.advance(1);
    const { deliveries } = await claimWith(4);
    expect(deliveries.filter((d) => d.endpointId === few!.id)).toHaveLength(1);
    expect(deliveries.filter((d) => d.endpointId === many!.id)).toHaveLength(3);
  });

  it('follows the endpoint to its new host when its URL changes', async () => {
    const [moving] = await endpoints('http://127.0.0.1:1/a', 'http://127.0.0.1:1/b');
    await updateEndpoint(t.db, moving!.id, { ...moving!, url: 'http://LOCALHOST./a' }, clock.now());
    const { rows } = await t.db.query<{ host: string }>(
      'select host from courier_endpoint_queues where endpoint_id = $1',
      [moving!.id],
    );
    expect(rows[0]!.host).toBe('localhost:80');
    await publishMany(5);
    // Two hosts now, each with its own cap of 3.
    expect((await claimWith(3)).deliveries).toHaveLength(6);
  });

  it('keeps the four-argument claim of the previous release working, without a host cap', async () => {
    await endpoints('http://127.0.0.1:1/a', 'http://127.0.0.1:1/b');
    await publishMany(3);
    const { rows } = await t.db.query<{ n: number }>(
      'select count(delivery_id)::int as n from courier_claim_batch($1, $2, 60000, 100)',
      ['old', new Date(clock.now())],
    );
    expect(rows[0]!.n).toBe(6);
  });

  it.runIf(backend === 'pg')(
    'skips a host another claim is counting, without waiting, and leaves its endpoints due at once',
    async () => {
      await endpoints('http://127.0.0.1:1/a', 'http://127.0.0.1:2/a');
      await publishMany(2);
      const counting = await holdOpen(t.db, (tx) =>
        tx.query(`select pg_advisory_xact_lock(hashtext(current_schema() || '.courier_host:127.0.0.1:1'))`),
      );
      try {
        const { deliveries, nextDueAt } = await claimWith(5);
        expect(deliveries.map((d) => d.url)).toEqual(['http://127.0.0.1:2/a', 'http://127.0.0.1:2/a']);
        expect(nextDueAt).toBe(clock.now());
      } finally {
        await counting.commit();
      }
      expect((await claimWith(5)).deliveries.map((d) => d.url)).toEqual([
        'http://127.0.0.1:1/a',
        'http://127.0.0.1:1/a',
      ]);
    },
  );

  it.runIf(backend === 'pg')('never lets claims made at once spend more than the host has', async () => {
    await endpoints(...Array.from({ length: 8 }, (_, i) => `http://127.0.0.1:1/ep${i}`));
    await publishMany(10);
    for (let round = 0; round < 5; round++) {
      const claims = await Promise.all(Array.from({ length: 6 }, (_, i) => claimWith(5, `w${i}`, 3)));
      const taken = claims.flatMap((c) => c.deliveries);
      const { rows } = await t.db.query<{ n: number }>(
        'select sum(in_flight)::int as n from courier_endpoint_queues',
      );
      expect(rows[0]!.n).toBeLessThanOrEqual(5);
      expect(rows[0]!.n).toBe(taken.length);
      for (const [i, c] of claims.entries())
        if (c.deliveries.length > 0)
          await complete(
            t.db,
            `w${i}`,
            clock.now(),
            c.deliveries.map((d) => delivered(d.id, 1, clock.now())),
            100,
          );
      clock.advance(500);
    }
  });
});
