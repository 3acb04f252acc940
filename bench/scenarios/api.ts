/** Courier through its HTTP API: `courier serve` (API and worker in one process), messages POSTed. */
import { randomBytes } from 'node:crypto';
import { Pool } from 'undici';
import { type CpuPerDelivery, startCpuSampler } from '../cpu.ts';
import {
  type BenchReceiver,
  COURIER_PROCESS,
  concurrently,
  courierCli,
  payload,
  peakRssMiB,
  spawnChild,
  waitFor,
} from '../lib.ts';
import { ENDPOINTS, setupCourier, type WorkerCommand, workerEnv } from './courier.ts';

const CONCURRENCY = 32;

export interface ApiResult {
  /** 202 answers per second, from the first request to the last answer. */
  publishPerSec: number;
  /** Deliveries per second at the receiver, first to last arrival, while publishing went on. */
  deliveriesPerSec: number;
  /** VmHWM of the `courier serve` process (API and worker). */
  peakRssMiB: number | null;
  /** Per message delivered, from the first arrival to the last: `system` is `courier serve`. */
  cpu: CpuPerDelivery | null;
}

/** `serve`: another checkout's CLI, node flags, settings (`npm run bench:ab -- --api`). */
export async function apiThroughput(
  receiver: BenchReceiver,
  n: number,
  serve: { env?: Record<string, string>; command?: WorkerCommand } = {},
): Promise<ApiResult> {
  const setup = await setupCourier(receiver);
  const token = randomBytes(24).toString('hex');
  const server = spawnChild(
    [serve.command?.cli ?? courierCli().path, 'serve'],
    {
      ...workerEnv(setup.schema),
      COURIER_PORT: '0',
      COURIER_HOST: '127.0.0.1',
      COURIER_ADMIN_TOKEN: token,
      ...serve.env,
    },
    serve.command?.nodeFlags,
  );
  try {
    await waitFor(() => /running at http:\/\/\S+/.test(server.output()), 60_000, 'courier serve');
    const url = /running at (http:\/\/\S+)/.exec(server.output())![1]!;
    const pool = new Pool(url, { connections: CONCURRENCY });
    await receiver.reset();
    const sampler = startCpuSampler(COURIER_PROCESS);
    const body = payload();
    const publishPerSec = await concurrently(n, CONCURRENCY, async (i) => {
      const res = await pool.request({
        method: 'POST',
        path: `/api/v1/app/${setup.appId}/msg`,
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: `{"eventType":"e${i % ENDPOINTS}","payload":${body}}`,
      });
      const text = await res.body.text();
      if (res.statusCode !== 202) throw new Error(`API publish answered ${res.statusCode}: ${text}`);
    });
    const deliveriesPerSec = await receiver.rate(n);
    const stats = await receiver.stats();
    const cpu = sampler.stop(stats.first, stats.last, stats.count);
    await pool.close();
    return { publishPerSec, deliveriesPerSec, peakRssMiB: peakRssMiB(server.proc.pid), cpu };
  } finally {
    await server.stop();
    await setup.close();
  }
}
