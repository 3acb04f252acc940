import { systemClock } from '../clock.ts';
import type { Config } from '../config.ts';
import type { Logger } from '../logger.ts';
import type { CourierMetrics } from '../metrics/metrics.ts';
import type { Database } from '../store/db.ts';

export interface MetricsPort {
  metrics: CourierMetrics;
  close(): Promise<void>;
}

/**
 * The metrics, kept and served on COURIER_METRICS_PORT when it is set; null otherwise. Loaded
 * only then: prom-client and its process figures cost memory a worker without metrics would carry.
 */
export async function openMetricsPort(
  config: Config,
  db: Database,
  logger: Logger,
): Promise<MetricsPort | null> {
  if (!config.metrics) return null;
  const [{ CourierMetrics }, { serveMetrics }] = await Promise.all([
    import('../metrics/metrics.ts'),
    import('../metrics/server.ts'),
  ]);
  const metrics = new CourierMetrics({ endpointSeries: config.metrics.endpoints });
  if (config.metrics.queue) metrics.watchQueue(db, systemClock);
  metrics.watchEndpoints(db);
  const server = await serveMetrics(metrics, config.metrics, logger);
  logger.info({ address: `${server.address}/metrics` }, 'metrics served');
  return { metrics, close: server.close };
}
