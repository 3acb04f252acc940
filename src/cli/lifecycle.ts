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
 * A repeat within this long is the same Ctrl-C delivered twice: a terminal signals the whole
 * foreground process group, and npm (and tsx) also forward it to their child.
 */
const REPEAT_MS = 1_000;

/**
 * Runs `stop` once on SIGTERM or SIGINT (graceful shutdown); a second signal, a second or more
 * after the first, exits at once.
 */
export function onShutdown(logger: Logger, stop: () => Promise<void>): void {
  let firstAt: number | null = null;
  const handler = (signal: NodeJS.Signals) => {
    if (firstAt !== null) {
      if (performance.now() - firstAt < REPEAT_MS) return;
      logger.warn({ signal }, 'second signal: exiting now');
      process.exit(1);
    }
    firstAt = performance.now();
    logger.info({ signal }, 'shutting down (a second signal, a second from now or later, exits at once)');
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
