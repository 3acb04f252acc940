/**
 * `npm run bounds`: resource bounds of one worker process.
 * 1. Head-of-line isolation: a healthy endpoint's latency while a dead endpoint (connections
 *    accepted, never answered) holds a deep backlog, against the same run without it.
 * 2. Memory: the worker's peak RSS, every 15 s of a 90 s drain of 1,000,000 deliveries due at once.
 */
import { createServer } from 'node:net';
import { payload, peakRssMiB, percentile, preciseNow, startReceiver, waitFor } from '../bench/lib.ts';
import { bulkDeliveries, setupCourier, startWorkers } from '../bench/scenarios/courier.ts';
import { systemClock } from '../src/clock.ts';
import { newId } from '../src/ids.ts';
import { generateSecret } from '../src/signing/index.ts';
import { publish } from '../src/store/publisher.ts';
import { createEndpoint } from '../src/store/repos/endpoints.ts';

const DUE = Number(process.env.COURIER_BOUNDS_DUE ?? 1_000_000);
/** How long the worker drains the due backlog; its peak RSS is read every CHECKPOINT_S seconds. */
const DRAIN_S = Number(process.env.COURIER_BOUNDS_SECONDS ?? 90);
const CHECKPOINT_S = 15;

/** Latency of 500 messages to a healthy endpoint, with or without a dead endpoint's backlog. */
async function healthyLatency(withDeadBacklog: boolean): Promise<{ p50: number; p99: number }> {
  const receiver = await startReceiver();
  const setup = await setupCourier(receiver);
  const blackhole = createServer(() => {}); // accepts, never answers: every request hits its deadline
  await new Promise<void>((resolve) => blackhole.listen(0, '127.0.0.1', resolve));
  try {
    if (withDeadBacklog) {
      const now = systemClock.now();
      const port = (blackhole.address() as { port: number }).port;
      await setup.db.transaction((tx) =>
        createEndpoint(tx, {
          id: newId('ep', now),
          appId: setup.appId,
          fields: {
            url: `http://127.0.0.1:${port}/dead`,
            eventTypes: ['dead'],
            maxInFlight: 10,
            rateLimit: 1000,
          },
          secret: generateSecret(),
          now,
        }),
      );
      for (let i = 0; i < 2_000; i++) {
        const t = systemClock.now();
        await publish(setup.db, {
          appId: setup.appId,
          messageId: newId('msg', t),
          eventType: 'dead',
          payload: Buffer.from('{}'),
          now: t,
        });
      }
    }
    const workers = await startWorkers(setup.schema, 1, {
      COURIER_REQUEST_TIMEOUT: '5s',
      COURIER_LEASE: '15s',
    });
    await receiver.reset();
    for (let i = 0; i < 500; i++) {
      const t = systemClock.now();
      await publish(setup.db, {
        appId: setup.appId,
        messageId: newId('msg', t),
        eventType: `e${i % 20}`,
        payload: Buffer.from(payload(preciseNow())),
        now: t,
      });
      await new Promise((resolve) => setTimeout(resolve, 4));
    }
    let stats = await receiver.stats();
    await waitFor(
      async () => {
        stats = await receiver.stats();
        return stats.count >= 500;
      },
      60_000,
      'healthy deliveries',
    );
    await Promise.all(workers.map((w) => w.stop('SIGKILL')));
    return { p50: percentile(stats.latencies, 50), p99: percentile(stats.latencies, 99) };
  } finally {
    blackhole.close();
    await setup.close();
    await receiver.stop();
  }
}

interface MemoryCheckpoint {
  seconds: number;
  peakRssMiB: number | null;
  delivered: number;
}

/** Whether the heap levels off under a sustained drain: the peak RSS so far, every CHECKPOINT_S. */
async function memoryWithDueBacklog(): Promise<MemoryCheckpoint[]> {
  const receiver = await startReceiver();
  const setup = await setupCourier(receiver);
  try {
    await bulkDeliveries(setup, DUE, systemClock.now());
    await receiver.reset();
    const [worker] = await startWorkers(setup.schema, 1);
    const checkpoints: MemoryCheckpoint[] = [];
    for (let seconds = CHECKPOINT_S; seconds <= DRAIN_S; seconds += CHECKPOINT_S) {
      await new Promise((resolve) => setTimeout(resolve, CHECKPOINT_S * 1000));
      const delivered = (await receiver.stats()).count;
      checkpoints.push({ seconds, peakRssMiB: peakRssMiB(worker!.proc.pid), delivered });
      if (delivered >= DUE) break;
    }
    await worker!.stop('SIGKILL');
    return checkpoints;
  } finally {
    await setup.close();
    await receiver.stop();
  }
}

const baseline = await healthyLatency(false);
const isolated = await healthyLatency(true);
const memory = await memoryWithDueBacklog();
const peaks = memory
  .map((c) => `${c.seconds} s: ${c.peakRssMiB} MiB (${c.delivered.toLocaleString('en-US')} delivered)`)
  .join('; ');
process.stdout.write(`
| Check | Figure |
|---|---|
| Healthy endpoints alone | latency p50 ${baseline.p50.toFixed(1)} ms, p99 ${baseline.p99.toFixed(1)} ms (500 messages, 20 endpoints) |
| Beside a dead endpoint with 2,000 queued | latency p50 ${isolated.p50.toFixed(1)} ms, p99 ${isolated.p99.toFixed(1)} ms |
| ${DUE.toLocaleString('en-US')} deliveries due at once | worker peak RSS so far, at ${peaks} |
`);
process.exit(0);
