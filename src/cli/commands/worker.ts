import { systemClock } from '../../clock.ts';
import type { Config } from '../../config.ts';
import {
  ensureOperatorEndpoint,
  hasOperatorEndpoint,
  OperatorRelay,
} from '../../dispatch/operator-webhook.ts';
import type { Logger } from '../../logger.ts';
import type { CourierMetrics } from '../../metrics/metrics.ts';
import { systemRandom } from '../../random.ts';
import { createWorker, openMigratedDatabase } from '../../runtime.ts';
import type { Database } from '../../store/db.ts';
import { configOrExit, loggerFor, onShutdown } from '../lifecycle.ts';
import { type MetricsPort, openMetricsPort } from '../metrics-port.ts';

/** Starts a delivery worker on an open database; returns its stop function. */
export async function startWorker(
  db: Database,
  config: Config,
  logger: Logger,
  metrics?: CourierMetrics,
): Promise<() => Promise<void>> {
  if (config.operatorWebhookUrl) {
    const { resumed, stillPaused } = await ensureOperatorEndpoint(db, config.operatorWebhookUrl, systemClock);
    if (resumed !== null) {
      logger.warn(
        { released: resumed },
        'the operator webhook endpoint was paused; its URL changed, so resumed, its held notices released',
      );
    }
    if (stillPaused) {
      logger.error(
        {},
        'the operator webhook endpoint is paused: its notices are held. Fix COURIER_OPERATOR_WEBHOOK_URL, or POST /api/v1/app/courier-operator/endpoint/operator/resume',
      );
    }
  } else if (await hasOperatorEndpoint(db)) {
    logger.warn(
      {},
      'COURIER_OPERATOR_WEBHOOK_URL is not set, but the endpoint it made still receives operational events: DELETE /api/v1/operational-webhook/endpoint/operator stops them',
    );
  }
  const { worker, sender } = createWorker({
    db,
    config,
    clock: systemClock,
    random: systemRandom,
    logger,
    // Every worker relays operational events, to whatever operational webhook endpoints there are.
    operatorRelay: new OperatorRelay(db, systemClock, logger),
    metrics,
  });
  metrics?.watchWorker(worker);
  await worker.start();
  logger.info({ owner: worker.owner }, 'worker started');
  return async () => {
    // Longer than a request can take (its deadline plus the abandoned-request grace), so nothing
    // still on the wire is given back and sent again while the first request is open.
    try {
      await worker.stop(config.requestTimeoutMs + 1_000);
    } finally {
      await sender.close();
    }
  };
}

/** `courier worker`: delivery workers only, to scale out against one PostgreSQL. */
export async function worker(): Promise<void> {
  const config = configOrExit();
  const logger = loggerFor(config);
  const db = await openMigratedDatabase(config, logger);
  let metricsPort: MetricsPort | null = null;
  let stop: () => Promise<void>;
  try {
    metricsPort = await openMetricsPort(config, db, logger);
    stop = await startWorker(db, config, logger, metricsPort?.metrics);
  } catch (error) {
    // Its metrics port taken, say: nothing left listening, the database closed cleanly.
    await metricsPort?.close();
    await db.close();
    throw error;
  }
  onShutdown(logger, async () => {
    try {
      await stop();
    } finally {
      await metricsPort?.close();
      await db.close();
    }
  });
}
