/**
 * A delivery in flight when its endpoint is paused comes back held, like the rest of the endpoint's
 * deliveries, whichever way it comes back (migration 0018): given back by its worker, taken over
 * when its lease ran out, or retried by a completion. Racing cases hold the pause open so that the
 * other transaction runs against it, as in test/fuzz/store-races.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Completion, complete } from '../../src/store/queries/complete.ts';
import { heldCount, holdEndpoint, resumeEndpoint } from '../../src/store/queries/endpoint-status.ts';
import { reapExpiredLeases, release } from '../../src/store/queries/unclaim.ts';
import { createApp, createEndpoint, startApi, type TestApi } from '../e2e/support.ts';
import { deliveredCompletion } from '../support/fixtures.ts';
import { blockedBy, holdOpen } from '../support/transactions.ts';

const OWNER = 'worker-1';

describe('a delivery in flight when its endpoint is paused', () => {
  let api: TestApi;
  let appId: string;
  beforeAll(async () => {
    api = await startApi();
    appId = await createApp(api);
  });
  afterAll(() => api.close());

  /** Claimed by OWNER: its request is on its way. */
  const lease = (id: number, now: number) =>
    api.db.query('update courier_deliveries set lease_owner = $2, lease_expires_at = $3 where id = $1', [
      id,
      OWNER,
      new Date(now + 60_000),
    ]);

  /** An endpoint with one delivery leased to OWNER (sending), and one more waiting. */
  async function inFlight(name: string) {
    const ep = await createEndpoint(api, appId, { url: `https://example.com/${name}`, filterTypes: [name] });
    for (let i = 0; i < 2; i++) {
      await api.request('POST', `/api/v1/app/${appId}/msg`, { body: { eventType: name, payload: { i } } });
    }
    const now = api.clock.now();
    const { rows } = await api.db.query<{ id: string }>(
      'select id from courier_deliveries where endpoint_id = $1 order by id',
      [ep.id],
    );
    const id = Number(rows[0]!.id);
    await lease(id, now);
    await api.db.query('update courier_endpoint_queues set in_flight = 1 where endpoint_id = $1', [ep.id]);
    return { endpointId: ep.id, id, now, leased: [{ id, leaseUntil: now + 60_000 }] };
  }

  const pause = (endpointId: string) => holdEndpoint(api.db, endpointId, 'disabled', null, api.clock.now());

  /** Runs `act` while a pause of the endpoint is held open, then lets the pause commit. */
  async function duringPause<T>(endpointId: string, act: () => Promise<T>): Promise<T> {
    const paused = await holdOpen(api.db, (tx) =>
      holdEndpoint(tx, endpointId, 'paused', 'test', api.clock.now()),
    );
    const acting = act();
    try {
      await blockedBy(api.db, paused.pid);
    } finally {
      await paused.commit();
    }
    return acting;
  }

  const stateOf = async (id: number) =>
    (
      await api.db.query<{ state: string; lease_owner: string | null }>(
        'select state, lease_owner from courier_deliveries where id = $1',
        [id],
      )
    ).rows[0];

  const queueOf = async (endpointId: string) =>
    (
      await api.db.query<{ in_flight: number; active: boolean; next_due_at: Date | null }>(
        'select in_flight, active, next_due_at from courier_endpoint_queues where endpoint_id = $1',
        [endpointId],
      )
    ).rows[0];

  function retry(id: number, now: number): Completion {
    const delivered = deliveredCompletion(id, 1, now);
    return {
      ...delivered,
      state: 'pending',
      nextAttemptAt: now + 60_000,
      lastError: 'HTTP 503',
      streak: 'increment',
      attempt: {
        ...delivered.attempt,
        statusCode: 503,
        decision: 'retry',
        delayMs: 60_000,
        detail: 'HTTP 503',
      },
    };
  }

  it('given back by its worker after the pause: held', async () => {
    const { endpointId, id, leased } = await inFlight('release-after-pause');
    await pause(endpointId);
    const before = await queueOf(endpointId);
    expect(await release(api.db, OWNER, leased, api.clock.now())).toEqual({ released: 1, busy: [] });
    expect(await stateOf(id)).toEqual({ state: 'held', lease_owner: null });
    expect(await heldCount(api.db, endpointId)).toBe(2);
    // Its slot is free again, and it does not make the paused queue look due.
    expect(await queueOf(endpointId)).toEqual({ ...before, in_flight: 0 });
  });

  it('given back while the pause commits: held', async () => {
    const { endpointId, id, leased } = await inFlight('release-during-pause');
    expect(await duringPause(endpointId, () => release(api.db, OWNER, leased, api.clock.now()))).toEqual({
      released: 1,
      busy: [],
    });
    expect(await stateOf(id)).toEqual({ state: 'held', lease_owner: null });
    expect(await heldCount(api.db, endpointId)).toBe(2);
  });

  it('taken over when its lease ran out: held', async () => {
    const { endpointId, id, now } = await inFlight('reap-after-pause');
    await pause(endpointId);
    expect(await reapExpiredLeases(api.db, now + 61_000)).toBe(1);
    expect(await stateOf(id)).toEqual({ state: 'held', lease_owner: null });
    expect((await queueOf(endpointId))?.in_flight).toBe(0);
  });

  it('retried by a completion that read the endpoint as active before the pause committed: held', async () => {
    const { endpointId, id, now } = await inFlight('retry-during-pause');
    const before = await queueOf(endpointId);
    await duringPause(endpointId, () => complete(api.db, OWNER, now, [retry(id, now)], 100));
    expect(await stateOf(id)).toEqual({ state: 'held', lease_owner: null });
    expect(await heldCount(api.db, endpointId)).toBe(2);
    // The queue does not announce it as due: nothing is claimable on a paused endpoint.
    expect(await queueOf(endpointId)).toEqual({ ...before, in_flight: 0, active: false });
  });

  it('delivered while the pause commits: recorded as delivered, only the waiting one held', async () => {
    const { endpointId, id, now } = await inFlight('delivered-during-pause');
    await duringPause(endpointId, () => complete(api.db, OWNER, now, [deliveredCompletion(id, 1, now)], 100));
    expect(await stateOf(id)).toBeUndefined();
    expect(await heldCount(api.db, endpointId)).toBe(1);
  });

  it('is released with the others on resume', async () => {
    const { endpointId, id, now, leased } = await inFlight('resume-after-release');
    await pause(endpointId);
    await release(api.db, OWNER, leased, api.clock.now());
    expect(await resumeEndpoint(api.db, endpointId, now, 60_000, 7)).toBe(2);
    expect(await stateOf(id)).toEqual({ state: 'pending', lease_owner: null });
    expect(await heldCount(api.db, endpointId)).toBe(0);
  });

  it('an active endpoint gets its deliveries back as pending, as before', async () => {
    const { endpointId, id, now, leased } = await inFlight('release-active');
    expect(await release(api.db, OWNER, leased, api.clock.now())).toEqual({ released: 1, busy: [] });
    expect(await stateOf(id)).toEqual({ state: 'pending', lease_owner: null });
    await lease(id, now);
    await complete(api.db, OWNER, now, [retry(id, now)], 100);
    expect(await stateOf(id)).toEqual({ state: 'pending', lease_owner: null });
    expect(await heldCount(api.db, endpointId)).toBe(0);
  });
});
