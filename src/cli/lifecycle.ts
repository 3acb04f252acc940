import { type Config, ConfigError, loadConfig } from '../config.ts';
import { createLogger, type Logger } from '../logger.ts';

/** Loads the configuration or exits with a message naming the bad variable. */
export function configOrExit(): Config {
  try {
    return loadConfig();
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`courier: configuration error: ${error.message}\n`);
      process.exit(2);
    }
    throw error;
  }
}

export function loggerFor(config: Config): Logger {
  return createLogger(config.logLevel);
}

/**
 * Runs `stop` once on SIGTERM or SIGINT (graceful shutdown); a second signal exits at once.
 */
export function onShutdown(logger: Logger, stop: () => Promise<void>): void {
  let stopping = false;
  const handler = (signal: NodeJS.Signals) => {
    if (stopping) {
      logger.warn({ signal }, 'second signal: exiting now');
      process.exit(1);
    }
    stopping = true;
    logger.info({ signal }, 'shutting down');
    stop().then(
      () => process.exit(0),
      (error) => {
        logger.error({ err: error }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', handler);
  process.on('SIGINT', handler);
}
