import pino from 'pino';

/** The slice of pino Courier uses, so tests can pass a silent or capturing logger. */
export interface Logger {
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
  debug(obj: object, msg?: string): void;
}

export function createLogger(level = process.env.COURIER_LOG_LEVEL ?? 'info'): Logger {
  // Secrets never reach a log line: redact the headers that carry them, wherever they appear.
  return pino({
    level,
    redact: ['*.authorization', '*.secret', '*.key', '*["webhook-signature"]', 'headers.authorization'],
  });
}

export const silentLogger: Logger = { info() {}, warn() {}, error() {}, debug() {} };
