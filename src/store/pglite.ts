import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { PGlite, type Results } from '@electric-sql/pglite';
import { type Database, PARENT_DATABASE, type QueryResult, type Transaction } from './db.ts';
import { acquireLock } from './lock-file.ts';

export interface PgliteOptions {
  /** Directory for the data files; absent means in memory (tests). */
  dataDir?: string;
}

/**
 * Embedded PostgreSQL (WASM) in this process. One process owns a data directory at a time,
 * enforced by an exclusive lock file. PGlite does not fsync like a server does: the embedded
 * store is for development and small installs, not safe against power loss.
 */
export class PgliteDatabase implements Database {
  readonly kind = 'pglite';

  private constructor(
    private readonly db: PGlite,
    private readonly releaseLock: () => void,
  ) {}

  static async open(options: PgliteOptions = {}): Promise<PgliteDatabase> {
    let releaseLock = () => {};
    if (options.dataDir) {
      mkdirSync(options.dataDir, { recursive: true });
      releaseLock = acquireLock(join(options.dataDir, 'courier.lock'));
    }
    try {
      const db = await PGlite.create(options.dataDir ? join(options.dataDir, 'pgdata') : undefined);
      return new PgliteDatabase(db, releaseLock);
    } catch (error) {
      releaseLock();
      throw error;
    }
  }

  async query<T>(sql: string, params?: readonly unknown[]): Promise<QueryResult<T>> {
    const result = await this.db.query<T>(sql, params as unknown[] | undefined);
    return toResult(result);
  }

  transaction<T>(fn: (tx: Transaction) => Promise<T>): Promise<T> {
    return this.db.transaction((t) =>
      fn({
        [PARENT_DATABASE]: this,
        async query<R>(sql: string, params?: readonly unknown[]) {
          const result = await t.query<R>(sql, params as unknown[] | undefined);
          return toResult(result);
        },
        async exec(sql: string) {
          await t.exec(sql);
        },
      }),
    );
  }

  /** In-process: the connection is never lost, so there is nothing to reconnect. */
  async listen(channel: string, onNotify: (payload: string) => void): Promise<() => Promise<void>> {
    return this.db.listen(channel, onNotify);
  }

  async close(): Promise<void> {
    try {
      await this.db.close();
    } finally {
      this.releaseLock();
    }
  }
}

/** pg's rowCount: rows changed by a write, rows returned by a read (PGlite reports 0 changed for reads). */
function toResult<T>(result: Results<T>): QueryResult<T> {
  return { rows: result.rows, rowCount: Math.max(result.affectedRows ?? 0, result.rows.length) };
}
