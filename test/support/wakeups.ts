/** Wake-ups built for tests, with the errors they log kept. */
import { ManualClock } from '../../src/clock.ts';
import { Wakeups } from '../../src/dispatch/wakeups.ts';
import type { Logger } from '../../src/logger.ts';
import type { Database } from '../../src/store/db.ts';

/** A logger that keeps its errors' messages and drops the rest. */
export function errorLog(): { log: Logger; errors: string[] } {
  const errors: string[] = [];
  return { log: { info() {}, warn() {}, debug() {}, error: (_obj, msg) => errors.push(msg ?? '') }, errors };
}

/** A worker's wake-ups whose statements go to `db` and whose LISTEN goes to `listener`. */
export function wakeupsListeningThrough(db: Database, listener: Database): { w: Wakeups; errors: string[] } {
  const split: Database = Object.assign(Object.create(db) as Database, {
    listen: (channel: string, onNotify: (payload: string) => void, onReconnect?: () => void) =>
      listener.listen(channel, onNotify, onReconnect),
  });
  const { log, errors } = errorLog();
  return { w: new Wakeups(split, new ManualClock(Date.UTC(2026, 0, 1, 12)), log, 30_000), errors };
}
