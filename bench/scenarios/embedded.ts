/** The same end-to-end run on the embedded store (PGlite): one process publishes, then one delivers. */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type BenchReceiver, courierCli, peakRssMiB, spawnChild, waitFor } from '../lib.ts';

const PREFILL = fileURLToPath(new URL('../workers/pglite-prefill.ts', import.meta.url));

export interface EmbeddedResult {
  deliveriesPerSec: number;
  publishPerSec: number;
  /** VmHWM of the worker, the database inside it. */
  peakRssMiB: number | null;
}

export async function embeddedThroughput(receiver: BenchReceiver, n: number): Promise<EmbeddedResult> {
  const dataDir = mkdtempSync(join(tmpdir(), 'courier-bench-'));
  try {
    const prefill = spawnChild([PREFILL, dataDir, receiver.url, String(n)]);
    if ((await prefill.exited) !== 0) throw new Error(`PGlite prefill failed:\n${prefill.output()}`);
    const publishPerSec = Number(/publishPerSec=([\d.]+)/.exec(prefill.output())?.[1]);
    await receiver.reset();
    const worker = spawnChild([courierCli().path, 'worker'], {
      COURIER_DATA_DIR: dataDir,
      COURIER_DATABASE_URL: '',
      COURIER_ALLOW_PRIVATE_NETWORKS: '127.0.0.0/8',
      COURIER_LOG_LEVEL: 'info',
    });
    await waitFor(() => worker.output().includes('worker started'), 60_000, 'the embedded worker');
    const deliveriesPerSec = await receiver.rate(n);
    const rss = peakRssMiB(worker.proc.pid);
    await worker.stop();
    return { deliveriesPerSec, publishPerSec, peakRssMiB: rss };
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
}
