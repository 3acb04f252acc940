import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/clock.ts';
import type { Database } from '../../src/store/db.ts';
import { type Receiver, startReceiver } from '../delivery/receiver.ts';
import { BACKENDS, openTestDatabase, type TestDatabase } from '../support/databases.ts';
import { runningWorker, virtualWorker } from '../support/engine.ts';
import { makeApp, makeEndpoint, publishJson } from '../support/fixtures.ts';
import { spawnWorker, stopWorker } from '../support/worker-process.ts';

/** A receiver whose answers take 30 ms, so that requests overlap unless something holds them back. */
async function slowReceiver() {
  const counts = { open: 0, mostOpen: 0 };
  const receiver = await startReceiver((_req, res) => {
    counts.mostOpen = Math.max(counts.mostOpen, ++counts.open);
    setTimeout(() => {
      counts.open--;
      res.end('ok');
    }, 30);
  });
  return { receiver, counts };
}

/** `endpoints` endpoints on the one receiver, each sent `messages` messages. */
async function publishToOneHost(
  db: Database,
  receiver: Receiver,
  endpoints: number,
  messages: number,
  now = systemClock.now(),
) {
  const app = await makeApp(db, now);
  for (let i = 0; i < endpoints; i++)
    await makeEndpoint(db, app.id, now, { url: `${receiver.url}/ep${i}`, maxInFlight: 10 });
  for (let i = 0; i < messages; i++) await publishJson(db, app.id, now, { i });
}

async function untilReceived(receiver: Receiver, n: number) {
  const deadline = Date.now() + 30_000;
  while (receiver.requests.length < n && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
}

async function deliveryStates(db: Database) {
  const { rows } = await db.query<{ state: string; n: number }>(
    'select state, count(*)::int as n from courier_delivery_states group by state',
  );
  return rows;
}

describe.each(BACKENDS)('a worker with a per-host in-flight cap on %s', (backend) => {
  let t: TestDatabase;
  let receiver: Receiver;
  let counts: { open: number; mostOpen: number };

  beforeEach(async () => {
    t = await openTestDatabase(backend);
    ({ receiver, counts } = await slowReceiver());
  });
  afterEach(async () => {
    await receiver.close();
    await t.drop();
  });

  /** Delivers 8 messages to each of 4 endpoints on the one receiver. */
  const drain = async (maxInFlightPerHost: number) => {
    await publishToOneHost(t.db, receiver, 4, 8);
    const { worker, sender } = runningWorker(t.db, { maxInFlightPerHost, completionLingerMs: 0 });
    await worker.start();
    try {
      await untilReceived(receiver, 32);
    } finally {
      await worker.stop();
      await sender.close();
    }
    return deliveryStates(t.db);
  };

  it("keeps a receiving host's open requests within the cap across its endpoints, and delivers everything", async () => {
    expect(await drain(3)).toEqual([{ state: 'delivered', n: 32 }]);
    expect(receiver.requests).toHaveLength(32);
    expect(counts.mostOpen).toBe(3);
  });

  it("ends the holds on a host as its completions free the host's slots: a claim at the same instant goes on", async () => {
    const { clock, worker, sender } = virtualWorker(t.db, { maxInFlightPerHost: 3 });
    try {
      await publishToOneHost(t.db, receiver, 4, 2, clock.now());
      // Without the holds ended, the second claim would find the other endpoints held for 500 ms.
      expect(await worker.runOnce()).toBe(3);
      expect(await worker.runOnce()).toBe(3);
      expect(await worker.runOnce()).toBe(2);
      expect(counts.mostOpen).toBe(3);
    } finally {
      await sender.close();
    }
  });

  it('leaves each endpoint to its own cap when there is none (the default)', async () => {
    expect(await drain(0)).toEqual([{ state: 'delivered', n: 32 }]);
    expect(counts.mostOpen).toBeGreaterThan(3);
  });
});

describe('two worker processes given COURIER_MAX_IN_FLIGHT_PER_HOST', () => {
  it('keep to it together', { timeout: 60_000 }, async () => {
    const t = await openTestDatabase('pg');
    const { receiver, counts } = await slowReceiver();
    const workers = [];
    try {
      await publishToOneHost(t.db, receiver, 5, 20);
      const env = { COURIER_MAX_IN_FLIGHT_PER_HOST: '4' };
      workers.push(...(await Promise.all([spawnWorker(t.schema!, env), spawnWorker(t.schema!, env)])));
      await untilReceived(receiver, 100);
      await Promise.all(workers.map((w) => stopWorker(w)));
      expect(await deliveryStates(t.db)).toEqual([{ state: 'delivered', n: 100 }]);
      expect(counts.mostOpen).toBe(4);
    } finally {
      await Promise.all(workers.map((w) => stopWorker(w, 'SIGKILL')));
      await receiver.close();
      await t.drop();
    }
  });
});
