import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/clock.ts';
import { PolicyResolver } from '../../src/dispatch/policy-resolver.ts';
import { type Receiver, startReceiver } from '../delivery/receiver.ts';
import { BACKENDS, openTestDatabase, type TestDatabase } from '../support/databases.ts';
import { runningWorker } from '../support/engine.ts';
import { makeApp, makeEndpoint, publishJson } from '../support/fixtures.ts';

describe.each(BACKENDS)('a retry on an endpoint at its cap, on %s', (backend) => {
  let t: TestDatabase;
  let receiver: Receiver;
  const arrivals: Array<{ m: string; at: number }> = [];

  beforeEach(async () => {
    t = await openTestDatabase(backend);
    arrivals.length = 0;
    let failedA = false;
    receiver = await startReceiver((_req, res, body) => {
      const { m } = JSON.parse(body.toString()) as { m: string };
      arrivals.push({ m, at: Date.now() });
      if (m === 'A' && !failedA) {
        failedA = true;
        res.writeHead(500).end();
        return;
      }
      // B holds the endpoint's one slot while A's retry is scheduled.
      setTimeout(() => res.end('ok'), m === 'B' ? 300 : 0);
    });
  });
  afterEach(async () => {
    await receiver.close();
    await t.drop();
  });

  it('is sent when due, not at the idle timeout, after a completion frees the slot', async () => {
    const { sender, worker } = runningWorker(t.db, {
      policies: new PolicyResolver({ backoff: { scheduleMs: [1_000], jitter: 'none' } }),
      maxIdleMs: 30_000,
    });
    const app = await makeApp(t.db, systemClock.now());
    await makeEndpoint(t.db, app.id, systemClock.now(), { url: receiver.url, maxInFlight: 1 });
    await worker.start();
    try {
      await publishJson(t.db, app.id, systemClock.now(), { m: 'A' });
      await publishJson(t.db, app.id, systemClock.now(), { m: 'B' });
      const deadline = Date.now() + 20_000;
      while (arrivals.filter((a) => a.m === 'A').length < 2 && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 20));
      }
    } finally {
      await worker.stop(1_000);
      await sender.close();
    }
    const [firstA, retryA] = arrivals.filter((a) => a.m === 'A');
    expect(arrivals.map((a) => a.m)).toEqual(['A', 'B', 'A']);
    // Due a second after the first attempt: sent then, not at the idle timeout 30 s later (the
    // bound leaves a loaded machine 9 s of slack either way).
    expect(retryA!.at - firstA!.at).toBeGreaterThanOrEqual(1_000);
    expect(retryA!.at - firstA!.at).toBeLessThan(10_000);
  });
});
