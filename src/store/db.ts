/**
 * The small database port the rest of Courier talks to. Two adapters implement it:
 * node-postgres (production, many processes) and PGlite (embedded, one process).
 * Both speak the same PostgreSQL dialect; nothing above this port knows which is in use.
 */
export interface QueryResult<T> {
  rows: T[];
  rowCount: number;
}

export interface Queryable {
  query<T = Record<string, unknown>>(sql: string, params?: readonly unknown[]): Promise<QueryResult<T>>;
}

const preparedNames = new Map<string, string>();

/**
 * Marks a hot statement. The node-postgres adapter prepares it once per connection under this name
 * instead of parsing and planning it on every call (measured: about 100 µs of server time per
 * call; a one-row claim costs about 300 µs in all). Returns the SQL unchanged.
 */
export function prepared(name: string, sql: string): string {
  preparedNames.set(sql, name);
  return sql;
}

/** The name a hot statement was prepared under, if it is one. */
export function preparedName(sql: string): string | undefined {
  return preparedNames.get(sql);
}

/** Transactions and wrapping handles point back at their database (see secrets-at-rest.ts). */
export const PARENT_DATABASE = Symbol('courier.parentDatabase');

export interface Transaction extends Queryable {
  readonly [PARENT_DATABASE]?: Database;
  /** Runs a script of several statements (migrations). */
  exec(sql: string): Promise<void>;
}

export interface Database extends Queryable {
  readonly kind: 'pg' | 'pglite';
  /** Set on a handle that wraps another database. */
  readonly [PARENT_DATABASE]?: Database;
  /** Runs fn inside BEGIN … COMMIT; rolls back when fn throws. Never hold one across an HTTP call. */
  transaction<T>(fn: (tx: Transaction) => Promise<T>): Promise<T>;
  /**
   * Subscribes to NOTIFY on a channel; survives reconnects. `onReconnect` is called when the
   * listening connection is made anew, after a loss or a first attempt that failed (whatever was
   * notified meanwhile was missed); without it, `onNotify('')`. Returns an unsubscribe function.
   */
  listen(
    channel: string,
    onNotify: (payload: string) => void,
    onReconnect?: () => void,
  ): Promise<() => Promise<void>>;
  close(): Promise<void>;
}

/** A database, not a transaction: what it is given may be batched with other callers'. */
export function isDatabase(q: Queryable): q is Database {
  return typeof (q as Partial<Database>).transaction === 'function';
}

/** Raised for failures of the database itself (connection lost, server down), as opposed to bad input. */
export class DatabaseUnavailableError extends Error {
  readonly code = 'DATABASE_UNAVAILABLE';
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'DatabaseUnavailableError';
  }
}
