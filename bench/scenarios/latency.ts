/** Publish-to-receiver latency at a fixed offered load (LISTEN/NOTIFY wakes the worker, no polling). */
import { systemClock } from '../../src/clock.ts';
import { newId } from '../../src/ids.ts';
import { publish } from '../../src/store/publisher.ts';
import { type CpuPerDelivery, startCpuSampler } from '../cpu.ts';
import {
  type BenchReceiver,
  COURIER_PROCESS,
  payload,
  peakRssMiB,
  percentile,
  preciseNow,
  type ReceiverStats,
  waitFor,
} from '../lib.ts';
import { type CourierSetup, ENDPOINTS, setupCourier, startWorkers, type WorkerCommand } from './courier.ts';

const MAX_OUTSTANDING = 64;

/**
 * The untimed run at the same rate before the measured one: the worker starts cold (JIT,
 * connections) and falls behind at first. At 7,000/s the backlog it builds took 0.5–1.5 s to clear
 * (docs/performance-history.md, thirteenth session), so two seconds, or a fifth of a shorter run.
 */
export function warmupSeconds(seconds: number): number {
  return Math.min(2, seconds / 5);
}

export interface LatencyResult {
  offeredPerSec: number;
  achievedPerSec: number;
  p50Ms: number;
  p99Ms: number;
  samples: number;
  /**
   * CPU while the messages arrived: the worker as the system, and the bench process publishing
   * them in the whole machine's figure. A busy machine explains a missed latency target: the
   * queueing is for CPU, not for Courier's queue.
   */
  cpu: CpuPerDelivery | null;
  /** VmHWM of the worker. */
  peakRssMiB: number | null;
}

/** Publishes `total` messages at `ratePerSec`, each stamped with its send instant; returns the rate achieved. */
async function publishPaced(setup: CourierSetup, ratePerSec: number, total: number): Promise<number> {
  const started = preciseNow();
  let sent = 0;
  const inFlight = new Set<Promise<unknown>>();
  // Open-loop pacing: each message leaves at its scheduled instant, whatever the previous ones do.
  while (sent < total) {
    const due = started + (sent * 1000) / ratePerSec;
    const wait = due - preciseNow();
    // Always yield: a busy wait for a sub-millisecond gap would starve this process's own I/O.
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    // More publishes outstanding than the pool can serve would only queue inside this process.
    while (inFlight.size >= MAX_OUTSTANDING) await Promise.race(inFlight);
    while (
      sent < total &&
      started + (sent * 1000) / ratePerSec <= preciseNow() &&
      inFlight.size < MAX_OUTSTANDING
    ) {
      const i = sent++;
      const now = systemClock.now();
      const p = publish(setup.db, {
        appId: setup.appId,
        messageId: newId('msg', now),
        eventType: `e${i % ENDPOINTS}`,
        payload: Buffer.from(payload(preciseNow())),
        now,
      });
      inFlight.add(p);
      void p.finally(() => inFlight.delete(p));
    }
  }
  await Promise.all(inFlight);
  return total / ((preciseNow() - started) / 1000);
}

/** The receiver's figures once `total` requests arrived since its reset. */
async function arrivals(receiver: BenchReceiver, total: number): Promise<ReceiverStats> {
  let stats = await receiver.stats();
  await waitFor(
    async () => {
      stats = await receiver.stats();
      return stats.count >= total;
    },
    120_000,
    'latency run deliveries',
  );
  return stats;
}

export async function courierLatency(
  receiver: BenchReceiver,
  ratePerSec: number,
  seconds: number,
  /** The worker's settings or another build of it (bench:ab --latency compares them). */
  worker: { env?: Record<string, string>; command?: WorkerCommand } = {},
): Promise<LatencyResult> {
  const setup = await setupCourier(receiver);
  const workers = await startWorkers(setup.schema, 1, worker.env, worker.command);
  try {
    // Warm-up, delivered and forgotten before the measured run, so that every sample of that counts.
    await receiver.reset();
    const warmup = Math.round(ratePerSec * warmupSeconds(seconds));
    await publishPaced(setup, ratePerSec, warmup);
    await arrivals(receiver, warmup);
    await receiver.reset();
    const sampler = startCpuSampler(COURIER_PROCESS);
    const total = Math.round(ratePerSec * seconds);
    const achievedPerSec = await publishPaced(setup, ratePerSec, total);
    const stats = await arrivals(receiver, total);
    return {
      offeredPerSec: ratePerSec,
      achievedPerSec,
      p50Ms: percentile(stats.latencies, 50),
      p99Ms: percentile(stats.latencies, 99),
      samples: stats.latencies.length,
      cpu: sampler.stop(stats.first, stats.last, stats.count),
      peakRssMiB: peakRssMiB(workers[0]!.proc.pid),
    };
  } finally {
    await Promise.all(workers.map((w) => w.stop()));
    await setup.close();
  }
}
