import { ensureAdminToken } from '../../api/auth.ts';
import { buildServer } from '../../api/server.ts';
import { systemClock } from '../../clock.ts';
import { systemRandom } from '../../random.ts';
import { openMigratedDatabase } from '../../runtime.ts';
import { limitHeapGrowth } from '../heap-growth.ts';
import { configOrExit, loggerFor, onShutdown } from '../lifecycle.ts';
import { type MetricsPort, openMetricsPort } from '../metrics-port.ts';
import { startWorker } from './worker.ts';

/** `courier serve`: the API and the delivery workers in one process. */
export async function serve(): Promise<void> {
  const config = configOrExit();
  limitHeapGrowth();
  const logger = loggerFor(config);
  const db = await openMigratedDatabase(config, logger);
  let server: Awaited<ReturnType<typeof buildServer>> | undefined;
  let metricsPort: MetricsPort | null = null;
  let address: string;
  let stopWorker: () => Promise<void>;
  try {
    metricsPort = await openMetricsPort(config, db, logger);
    const metrics = metricsPort?.metrics;
    server = await buildServer({ db, config, clock: systemClock, logger, random: systemRandom, metrics });
    address = await server.listen({ port: config.port, host: config.host });
    // Made once the server listens, and shown at once: made before, a start that failed (its port
    // taken) stored a token nobody saw, and no later start would show one.
    const { created } = await ensureAdminToken(db, config, systemClock);
    if (created) {
      process.stdout.write(
        `\nAdmin API token (shown once; store it now):\n\n    ${created}\n\n` +
          'Set COURIER_ADMIN_TOKEN to choose your own instead.\n\n',
      );
    }
    stopWorker = await startWorker(db, config, logger, metrics);
  } catch (error) {
    // Its port taken, say: nothing is left listening, and the embedded database is shut down
    // cleanly, its lock file removed.
    await server?.close();
    await metricsPort?.close();
    await db.close();
    throw error;
  }

  const storage = config.databaseUrl ? 'PostgreSQL' : `embedded PGlite in ${config.dataDir}`;
  process.stdout.write(`Courier is running at ${address} (storage: ${storage})\n`);
  process.stdout.write(`API: ${address}/api/v1   reference: ${address}/docs\n`);
  onShutdown(logger, async () => {
    try {
      // Together: the worker's requests in flight need not wait for the API's to end.
      const stopped = await Promise.allSettled([server.close(), stopWorker()]);
      for (const s of stopped) if (s.status === 'rejected') throw s.reason;
    } finally {
      await metricsPort?.close();
      await db.close();
    }
  });
}
