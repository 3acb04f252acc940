import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.ts';
import { claim } from '../../src/store/queries/claim.ts';
import { type Completion, complete } from '../../src/store/queries/complete.ts';
import { holdEndpoint, resumeEndpoint } from '../../src/store/queries/endpoint-status.ts';
import { type Endpoint, getEndpointById, updateEndpoint } from '../../src/store/repos/endpoints.ts';
import { BACKENDS, openTestDatabase, type TestDatabase } from '../support/databases.ts';
import {
  deliveredCompletion as delivered,
  emptyTables,
  makeApp,
  makeEndpoint,
  publishJson,
} from '../support/fixtures.ts';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;

/** An endpoint's run of failed attempts (migration 0031), as completions keep it. */
describe.each(BACKENDS)('the run of failures on %s', (backend) => {
  let t: TestDatabase;
  let clock: ManualClock;
  let appId: string;
  let ep: Endpoint;

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
  });

  /** A 503 from `url`, to be retried: not a streak step, but a failure. */
  const failedAt = (id: number, url = ep.url): Completion => {
    const base = delivered(id, 1, clock.now());
    return {
      ...base,
      state: 'pending',
      nextAttemptAt: clock.now() + 60_000,
      lastError: 'HTTP 503',
      streak: 'unchanged',
      attempt: { ...base.attempt, url, statusCode: 503, decision: 'retry' },
    };
  };
  /** Publishes `n` messages and claims their deliveries. */
  const claimed = async (n = 1) => {
    for (let i = 0; i < n; i++) await publishJson(t.db, appId, clock.now(), { i });
    const { deliveries } = await claim(t.db, { owner: 'w', now: clock.now(), leaseMs: 60_000, limit: 100 });
    return deliveries.map((d) => d.id);
  };
  const write = (completions: Completion[]) => complete(t.db, 'w', clock.now(), completions, 100);
  const messageOf = async (id: number) =>
    (
      await t.db.query<{ message_id: string }>('select message_id from courier_deliveries where id = $1', [
        id,
      ])
    ).rows[0]!.message_id;
  const failingSince = async () => (await getEndpointById(t.db, ep.id))!.failingSince;

  it('starts at the first failure, goes on through failures, and a success ends it', async () => {
    const start = clock.now();
    const [a] = await claimed();
    expect(await write([failedAt(a!)])).toMatchObject({
      failing: [{ endpointId: ep.id, failingSince: start }],
    });
    clock.advance(20 * HOUR);
    const [b] = await claimed();
    expect((await write([failedAt(b!)])).failing).toEqual([{ endpointId: ep.id, failingSince: start }]);
    expect(await failingSince()).toBe(start);

    clock.advance(HOUR);
    const [c] = await claimed();
    expect((await write([delivered(c!, 1, clock.now())])).failing).toEqual([]);
    expect(await failingSince()).toBeNull();
  });

  it('starts again after a day without a failure', async () => {
    const [a] = await claimed();
    await write([failedAt(a!)]);
    clock.advance(DAY + 1);
    const [b] = await claimed();
    const again = clock.now();
    expect((await write([failedAt(b!)])).failing).toEqual([{ endpointId: ep.id, failingSince: again }]);
  });

  it('counts the day without failures from the end of the wait the receiver asked for', async () => {
    const [a] = await claimed();
    const start = clock.now();
    await write([{ ...failedAt(a!), holdEndpointUntil: clock.now() + 30 * HOUR }]);
    clock.advance(30 * HOUR + 60_000);
    const [b] = await claimed();
    expect((await write([failedAt(b!)])).failing).toEqual([{ endpointId: ep.id, failingSince: start }]);
  });

  it('is ended by a URL change or the endpoint enabled again, whatever process makes them', async () => {
    // As an API process of the previous release does them: the endpoint row alone.
    const run = async () => {
      const [a] = await claimed();
      await write([failedAt(a!)]);
      expect(await failingSince()).not.toBeNull();
    };
    await run();
    await t.db.query(`update courier_endpoints set url = 'http://127.0.0.1:1/elsewhere' where id = $1`, [
      ep.id,
    ]);
    expect(await failingSince()).toBeNull();
    ep = (await getEndpointById(t.db, ep.id))!;
    await run();
    await t.db.query(`update courier_endpoints set status = 'disabled', description = 'x' where id = $1`, [
      ep.id,
    ]);
    expect(await failingSince()).not.toBeNull();
    await t.db.query(`update courier_endpoints set status = 'enabled' where id = $1`, [ep.id]);
    expect(await failingSince()).toBeNull();
  });

  it('goes by the order of a batch: a failure after its success starts a run, one before it does not', async () => {
    const [a, b] = await claimed(2);
    await write([failedAt(a!), delivered(b!, 1, clock.now())]);
    expect(await failingSince()).toBeNull();
    clock.advance(1_000);
    const [c, d] = await claimed(2);
    const now = clock.now();
    await write([delivered(c!, 1, now), failedAt(d!)]);
    expect(await failingSince()).toBe(now);
  });

  it("counts only an attempt to the endpoint's URL as it now is, and a new URL ends the run", async () => {
    const [a, b] = await claimed(2);
    await write([failedAt(a!)]);
    expect(await failingSince()).not.toBeNull();
    await updateEndpoint(t.db, ep.id, { ...ep, url: 'http://127.0.0.1:1/new' }, clock.now());
    expect(await failingSince()).toBeNull();
    // In flight to the old URL when it changed.
    expect((await write([failedAt(b!, ep.url)])).failing).toEqual([]);
    expect(await failingSince()).toBeNull();
  });

  it('is not reported for a paused endpoint, and a resume ends it', async () => {
    const [a, b] = await claimed(2);
    await write([failedAt(a!)]);
    await t.db.transaction((tx) => holdEndpoint(tx, ep.id, 'paused', 'paused through the API', clock.now()));
    expect((await write([failedAt(b!)])).failing).toEqual([]);
    await t.db.transaction((tx) => resumeEndpoint(tx, ep.id, clock.now(), 1_000, 0));
    expect(await failingSince()).toBeNull();
  });

  it('counts a completion written again once: its first write may have committed', async () => {
    const [a] = await claimed();
    const first = clock.now();
    const failure = failedAt(a!);
    await write([failure]);
    // Claimed again more than a day later, its first write's answer unheard: written again.
    clock.advance(DAY + HOUR);
    expect(await claimed(0)).toEqual([a]);
    const again = await write([{ ...failure, rewrite: true, messageId: await messageOf(a!) }]);
    expect(await failingSince()).toBe(first);
    // Nor does it carry the run, which a day without failures has ended: not reported.
    expect(again.failing).toEqual([]);
  });
});
