import type { Clock } from './clock.ts';
import { type Config, ssrfGuard } from './config.ts';
import { Sender } from './delivery/sender.ts';
import type { OperatorRelay } from './dispatch/operator-webhook.ts';
import { PolicyResolver } from './dispatch/policy-resolver.ts';
import { Worker } from './dispatch/worker.ts';
import type { Logger } from './logger.ts';
import type { WorkerMetrics } from './metrics/metrics.ts';
import type { Random } from './random.ts';
import type { Database } from './store/db.ts';
import { migrate } from './store/migrate.ts';
import { PgDatabase } from './store/pg.ts';
import { enableSecretsAtRest } from './store/secrets-at-rest.ts';

/** PostgreSQL when COURIER_DATABASE_URL is set, else the embedded PGlite in the data directory. */
export async function openDatabase(config: Config, logger: Logger): Promise<Database> {
  if (!config.databaseUrl) {
    // Loaded only when used: importing PGlite alone takes 45 MiB, which a worker on PostgreSQL
    // would carry for nothing.
    const { PgliteDatabase } = await import('./store/pglite.ts');
    return PgliteDatabase.open({ dataDir: config.dataDir });
  }
  if (config.schema !== 'public') {
    // The schema must exist before connections that put it on their search_path can use it.
    const bootstrap = new PgDatabase({ connectionString: config.databaseUrl, poolSize: 1 });
    try {
      // Looked up first: a role granted only the schema a DBA made may not create one, and
      // PostgreSQL checks that right before it sees "if not exists".
      const { rows } = await bootstrap.query('select 1 from pg_namespace where nspname = $1', [
        config.schema,
      ]);
      // Quoted: the configuration allows a reserved word (user, say) as the schema's name.
      if (rows.length === 0) await bootstrap.query(`create schema if not exists "${config.schema}"`);
    } catch (error) {
      // Processes starting together race "if not exists": the loser's insert of the schema's
      // catalog row fails as a duplicate, though the schema is there, which is all we need.
      const code = (error as { code?: string }).code;
      if (code !== '23505' && code !== '42P06') throw error;
    } finally {
      await bootstrap.close();
    }
  }
  return new PgDatabase({
    connectionString: config.databaseUrl,
    schema: config.schema === 'public' ? undefined : config.schema,
    onListenError: (error, retryInMs) =>
      logger.warn({ err: error.message, retryInMs }, 'LISTEN connection lost; reconnecting'),
  });
}

export async function openMigratedDatabase(config: Config, logger: Logger): Promise<Database> {
  const db = await openDatabase(config, logger);
  try {
    const applied = await migrate(db, {
      onRetry: ({ migration, attempt, pauseMs, error }) =>
        logger.warn(
          { migration, attempt, retryInMs: pauseMs, err: error.message },
          'migration waited too long for a table lock (a long transaction?); undone, trying again',
        ),
    });
    if (applied.length > 0) logger.info({ applied }, 'migrations applied');
    const { resealed } = await enableSecretsAtRest(db, config.secretsKey, config.secretsKeyPrevious);
    if (resealed > 0) {
      logger.info(
        { resealed },
        'signing secrets sealed with the key in use (taken over from the generated key, or never sealed before)',
      );
    }
    return db;
  } catch (error) {
    await db.close().catch(() => {});
    throw error;
  }
}

export interface WorkerDeps {
  db: Database;
  config: Config;
  clock: Clock;
  random: Random;
  logger: Logger;
  operatorRelay?: OperatorRelay;
  metrics?: WorkerMetrics;
}

export function createSender(config: Config, clock: Clock): Sender {
  return new Sender({
    guard: ssrfGuard(config),
    clock,
    requestTimeoutMs: config.requestTimeoutMs,
    // As many connections per origin as requests in flight: a request queued behind others to the
    // same host would spend its timeout waiting on us, and be counted as the receiver's failure.
    connections: config.workerConcurrency,
  });
}

export function createWorker(deps: WorkerDeps): { worker: Worker; sender: Sender } {
  const { config } = deps;
  const sender = createSender(config, deps.clock);
  const worker = new Worker({
    db: deps.db,
    sender,
    clock: deps.clock,
    random: deps.random,
    logger: deps.logger,
    policies: new PolicyResolver(config.retry),
    batchSize: config.batchSize,
    concurrency: config.workerConcurrency,
    leaseMs: config.leaseMs,
    maxInFlightPerHost: config.maxInFlightPerHost,
    pauseAfter: config.pauseAfter,
    disableFailingAfterMs: config.disableFailingAfterMs,
    retentionMs: config.retentionMs,
    operatorRelay: deps.operatorRelay,
    metrics: deps.metrics,
  });
  return { worker, sender };
}
