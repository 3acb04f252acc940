import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.ts';
import { PolicyResolver } from '../../src/dispatch/policy-resolver.ts';
import { SendLag } from '../../src/dispatch/send-lag.ts';
import { preparedName } from '../../src/store/db.ts';
import { type Receiver, startReceiver } from '../delivery/receiver.ts';
import { BACKENDS, openTestDatabase, type TestDatabase } from '../support/databases.ts';
import { virtualWorker } from '../support/engine.ts';
import { makeApp, makeEndpoint, publishJson } from '../support/fixtures.ts';
import { intercepting } from '../support/intercepting.ts';

describe.each(BACKENDS)('the send lag on %s', (backend) => {
  let t: TestDatabase;
  let receiver: Receiver;
  const clock = new ManualClock(Date.UTC(2026, 0, 1, 12));
  /** Virtual milliseconds each claim takes, in turn; then none. */
  let claimDurations: number[] = [];

  beforeEach(async () => {
    t = await openTestDatabase(backend);
    receiver = await startReceiver((_req, res) => res.end());
    claimDurations = [];
  });
  afterEach(async () => {
    await receiver.close();
    await t.drop();
  });

  /** A worker whose claims take the virtual time claimDurations says. */
  async function setUp(messages: number) {
    const slowClaims = intercepting(t.db, async (sql, _params, run) => {
      const result = await run();
      if (preparedName(sql) === 'courier_claim_batch') clock.advance(claimDurations.shift() ?? 0);
      return result;
    });
    const app = await makeApp(t.db, clock.now());
    await makeEndpoint(t.db, app.id, clock.now(), { url: receiver.url });
    for (let i = 0; i < messages; i++) await publishJson(t.db, app.id, clock.now(), { i });
    return virtualWorker(slowClaims, { clock });
  }

  it('sends when every claim is slow (a distant database, large payloads): a steady delay keeps the spacing', async () => {
    const { worker, sender } = await setUp(3);
    claimDurations = [250, 250, 250, 250];
    let claims = 0;
    while (receiver.requests.length < 3 && claims < 4) {
      await worker.runOnce();
      claims++;
    }
    await sender.close();
    // The first claim, slower than any before it by more than the allowance, is given back.
    expect({ requests: receiver.requests.length, claims, lateReleases: worker.lateReleases }).toEqual({
      requests: 3,
      claims: 2,
      lateReleases: 3,
    });
  });

  it.each([
    // The average counts the claim itself: up to 200 ms slower than the ones before still sends
    // (docs/architecture.md gives the bound this puts on the rate limit).
    [150, 1, 0],
    [250, 0, 1],
  ])('after instant claims, a claim of %i ms sends %i and gives back %i', async (stall, sent, late) => {
    const { worker, sender } = await setUp(0);
    claimDurations = [0, 0, stall];
    await worker.runOnce();
    await worker.runOnce();
    const app = await makeApp(t.db, clock.now());
    await makeEndpoint(t.db, app.id, clock.now(), { url: receiver.url, rateLimit: 1 });
    await publishJson(t.db, app.id, clock.now(), { i: 0 });
    expect(await worker.runOnce()).toBe(1);
    await sender.close();
    expect([receiver.requests.length, worker.lateReleases]).toEqual([sent, late]);
  });

  it('gives back, uncounted, what a claim slower than usual returns (a stall), and sends it next time', async () => {
    const { worker, sender } = await setUp(2);
    claimDurations = [0, 0, 600];
    expect(await worker.runOnce()).toBe(2); // instant claims: delivered
    expect(await worker.runOnce()).toBe(0);
    const app = await makeApp(t.db, clock.now());
    await makeEndpoint(t.db, app.id, clock.now(), { url: receiver.url });
    await publishJson(t.db, app.id, clock.now(), { late: true });
    expect(await worker.runOnce()).toBe(1); // 600 ms: late
    expect([receiver.requests.length, worker.lateReleases]).toEqual([2, 1]);
    const { rows } = await t.db.query<{ attempts: number; state: string }>(
      `select attempts, state from courier_deliveries`,
    );
    expect(rows).toEqual([{ attempts: 0, state: 'pending' }]);
    expect(await worker.runOnce()).toBe(1);
    await sender.close();
    expect(receiver.requests).toHaveLength(3);
  });

  it('counts the time spent signing the claim, which never holds back its first delivery', async () => {
    // Signing takes time on the worker's clock (200 deliveries of 1 MiB: about 0.1 s); here each
    // delivery's preparation (its policy resolved, then its request signed) takes 60 virtual ms.
    const base = new PolicyResolver({});
    const slowly: Pick<PolicyResolver, 'resolve'> = {
      resolve: (app, endpoint) => {
        clock.advance(60);
        return base.resolve(app, endpoint);
      },
    };
    const app = await makeApp(t.db, clock.now());
    await makeEndpoint(t.db, app.id, clock.now(), { url: receiver.url });
    for (let i = 0; i < 3; i++) await publishJson(t.db, app.id, clock.now(), { i });
    const { worker, sender } = virtualWorker(t.db, { clock, policies: slowly as PolicyResolver });
    expect(await worker.runOnce()).toBe(3);
    await sender.close();
    // Checked at 0 and 60 ms, the first two go (leaving at 120 ms, one signature after the last
    // check); at 120 ms the third is late and given back, uncounted, for the next claim.
    expect([receiver.requests.length, worker.lateReleases]).toEqual([2, 1]);
    const { rows } = await t.db.query<{ attempts: number; state: string }>(
      'select attempts, state from courier_deliveries',
    );
    expect(rows).toEqual([{ attempts: 0, state: 'pending' }]);
  });
});

describe('SendLag', () => {
  it('allows 100 ms beyond a moving average of claim durations that counts the latest claim', () => {
    const lag = new SendLag();
    lag.claimed(200); // average 100
    expect([lag.tooLate(200), lag.tooLate(201)]).toEqual([false, true]);
    lag.claimed(0); // average 50
    expect([lag.tooLate(150), lag.tooLate(151)]).toEqual([false, true]);
  });

  it('after one quick claim, lets steadily slow claims send again at the second', () => {
    // The shortest-of-recent rule gave back sixteen slow claims in a row here.
    const lag = new SendLag();
    lag.claimed(1);
    lag.claimed(250);
    expect(lag.tooLate(250)).toBe(true);
    lag.claimed(250);
    expect(lag.tooLate(250)).toBe(false);
  });
});
