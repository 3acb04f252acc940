import type { Database, Queryable } from './db.ts';

/**
 * Runs `read` in a transaction whose statements PostgreSQL stops after `ms`: a read whose cost
 * grows with the data (a walk over an application's messages, a count of the queue) cannot hold
 * its connection for longer. PGlite takes the setting and, without a timer to interrupt it, never
 * stops a statement.
 */
export function withStatementTimeout<T>(
  db: Database,
  ms: number,
  read: (q: Queryable) => Promise<T>,
): Promise<T> {
  return db.transaction(async (tx) => {
    await tx.query(`set local statement_timeout = ${Math.max(1, Math.round(ms))}`);
    return read(tx);
  });
}

/** PostgreSQL stopped the statement: its statement_timeout ran out (57014, query_canceled). */
export function isStatementTimeout(error: unknown): boolean {
  return (error as { code?: unknown } | null)?.code === '57014';
}
