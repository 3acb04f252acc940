/**
 * PostgreSQL breaks a deadlock (40P01) or a serialization conflict (40001) by aborting one of the
 * transactions involved, and expects the victim to be retried. The API's database handle retries
 * such a transaction (or single statement) a few times, with jitter so the two do not meet again,
 * instead of answering 500 for what a concurrent request caused. What a rolled-back transaction
 * did is undone, so running it again is safe.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Random } from '../random.ts';
import { type Database, PARENT_DATABASE } from '../store/db.ts';
import { isConflictAbort } from '../store/errors.ts';

const ATTEMPTS = 4;

async function retried<T>(run: () => Promise<T>, random: Random): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await run();
    } catch (error) {
      if (attempt >= ATTEMPTS || !isConflictAbort(error)) throw error;
      await sleep(Math.floor(random() * 20 * attempt));
    }
  }
}

/** `db` with deadlocked and conflicting transactions retried (looked up on each call, so `db` may be swapped in tests). */
export function retryingDeadlocks(db: Database, random: Random): Database {
  return {
    get kind() {
      return db.kind;
    },
    // What is registered against the database (its secrets key) must be found through this handle too.
    get [PARENT_DATABASE]() {
      return db[PARENT_DATABASE] ?? db;
    },
    query: (sql, params) => retried(() => db.query(sql, params), random),
    transaction: (fn) => retried(() => db.transaction(fn), random),
    listen: (channel, onNotify, onReconnect) => db.listen(channel, onNotify, onReconnect),
    close: () => db.close(),
  };
}
