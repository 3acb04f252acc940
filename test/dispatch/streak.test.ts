/**
 * The endpoint's permanent-failure streak as the worker keeps it: permanent outcomes extend it, a
 * 2xx resets it, and a 5xx or a network failure leaves it alone (docs/retry-policy.md).
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { getEndpointById } from '../../src/store/repos/endpoints.ts';
import { type Receiver, startReceiver } from '../delivery/receiver.ts';
import { BACKENDS, openTestDatabase, type TestDatabase } from '../support/databases.ts';
import { virtualWorker } from '../support/engine.ts';
import { makeApp, makeEndpoint, publishJson } from '../support/fixtures.ts';

type Answer = number | 'reset';

describe.each(BACKENDS)('failure streak on %s', (backend) => {
  let t: TestDatabase;
  let receiver: Receiver;
  /** What the receiver does with the next request. */
  let answer: Answer;

  beforeEach(async () => {
    t = await openTestDatabase(backend);
    answer = 200;
    receiver = await startReceiver((req, res) => {
      if (answer === 'reset') {
        req.socket.destroy(); // a network failure: no status ever arrives
        return;
      }
      res.writeHead(answer);
      res.end();
    });
  });
  afterEach(async () => {
    await receiver.close();
    await t.drop();
  });

  /** A worker pausing after 3, and one endpoint taking one request at a time. */
  async function setUp() {
    const engine = virtualWorker(t.db, { pauseAfter: 3 });
    const app = await makeApp(t.db, engine.clock.now());
    const ep = await makeEndpoint(t.db, app.id, engine.clock.now(), { url: receiver.url, maxInFlight: 1 });
    /** Answers the one delivery due with `a`, then returns the endpoint's status and streak. */
    const step = async (a: Answer) => {
      answer = a;
      engine.clock.advance(1_000); // attempts in order of started_at
      expect(await engine.worker.runOnce()).toBe(1);
      const endpoint = await getEndpointById(t.db, ep.id);
      return { status: endpoint?.status, failureStreak: endpoint?.failureStreak };
    };
    const publish = () => publishJson(t.db, app.id, engine.clock.now(), {});
    return { ...engine, ep, step, publish };
  }

  it('a 5xx or a reset connection neither counts nor resets it: the third 410 pauses the endpoint', async () => {
    const { clock, sender, step, publish } = await setUp();
    const enabled = (failureStreak: number) => ({ status: 'enabled', failureStreak });

    await publish();
    expect(await step(410)).toEqual(enabled(1));
    // One message carries the rest until it fails for good; each retry is due within the hour.
    await publish();
    expect(await step(503)).toEqual(enabled(1));
    clock.advance(3_600_000);
    expect(await step('reset')).toEqual(enabled(1));
    clock.advance(3_600_000);
    expect(await step(410)).toEqual(enabled(2));
    await publish();
    expect(await step(410)).toEqual({ status: 'paused', failureStreak: 3 });
    await sender.close();
    // The answers were taken as intended: the reset is a network failure, not a status.
    const { rows } = await t.db.query<{
      status_code: number | null;
      failure_kind: string | null;
      decision: string;
    }>('select status_code, failure_kind, decision from courier_attempts order by started_at');
    expect(rows).toEqual([
      { status_code: 410, failure_kind: null, decision: 'failed' },
      { status_code: 503, failure_kind: null, decision: 'retry' },
      { status_code: null, failure_kind: 'connection_reset', decision: 'retry' },
      { status_code: 410, failure_kind: null, decision: 'failed' },
      { status_code: 410, failure_kind: null, decision: 'failed' },
    ]);
  });

  it('a 2xx in between resets it', async () => {
    const { sender, step, publish } = await setUp();
    const expected: [Answer, number][] = [
      [410, 1],
      [410, 2],
      [200, 0],
      [410, 1],
      [410, 2],
    ];
    for (const [a, failureStreak] of expected) {
      await publish();
      expect(await step(a), String(a)).toEqual({ status: 'enabled', failureStreak });
    }
    await publish();
    expect(await step(410)).toEqual({ status: 'paused', failureStreak: 3 });
    await sender.close();
  });
});
