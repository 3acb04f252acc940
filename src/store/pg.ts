import pg from 'pg';
import {
  type Database,
  DatabaseUnavailableError,
  PARENT_DATABASE,
  preparedName,
  type QueryResult,
  type Transaction,
} from './db.ts';

// int8 (delivery ids, counts) as numbers: they stay far below 2^53 in practice.
pg.types.setTypeParser(20, (v) => Number(v));

export interface PgOptions {
  connectionString: string;
  /** Schema holding Courier's tables; tests use one schema per file. */
  schema?: string;
  poolSize?: number;
  /** Called with reconnect errors of the LISTEN connection (for logs): the 1st, 2nd, 4th, 8th … in a row. */
  onListenError?: (error: Error, retryInMs: number) => void;
}

const CONNECTION_ERROR_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  '57P01',
  '57P02',
  '57P03',
  '08006',
  '08001',
  '08003',
  '08004',
  '08000',
  '08007',
  '53300', // too many connections
  '57P05', // idle session timeout
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
]);

export function isConnectionError(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const code = (error as { code?: string }).code;
  if (code && CONNECTION_ERROR_CODES.has(code)) return true;
  return /Connection terminated|connection.*(closed|ended)|Client has encountered a connection error|not queryable|timeout exceeded when trying to connect/i.test(
    error.message,
  );
}

/** Why a connection failed: Node's AggregateError (every address of a host refused) has no message of its own. */
function reason(error: Error): string {
  const inner =
    error instanceof AggregateError ? error.errors.map((e: Error) => e.message).filter(Boolean) : [];
  return inner.join('; ') || error.message || ((error as { code?: string }).code ?? error.name);
}

/** host:port/database of a connection string, never its password. */
function serverOf(connectionString: string): string {
  try {
    const url = new URL(connectionString);
    return `${url.hostname || 'localhost'}:${url.port || 5432}${url.pathname}`;
  } catch {
    return 'the database';
  }
}

function wrap(error: unknown, server: string): unknown {
  if (isConnectionError(error)) {
    return new DatabaseUnavailableError(`database unavailable (${server}): ${reason(error as Error)}`, {
      cause: error,
    });
  }
  return error;
}

/** A hot statement goes by its prepared name (see prepared() in db.ts); others are parsed each time. */
function statement(sql: string, params?: readonly unknown[]): pg.QueryConfig {
  return { name: preparedName(sql), text: sql, values: params as unknown[] | undefined };
}

/**
 * What each pooled connection sets as it opens, before its first query. Not startup options: a
 * pooler in between refuses those (PgBouncer before 1.20, and later ones unless told to track
 * them), while a SET is an ordinary statement, undone by PgBouncer's reset when the session ends.
 */
function sessionSettings(schema: string | undefined): string {
  // No JIT: every Courier statement is short, and the hot functions' enable_seqscan = off lifts
  // plan costs past jit_above_cost, so the lease reaper compiled its plan on each run (360 ms).
  return `set jit = off${schema ? `; set search_path to ${pg.escapeIdentifier(schema)}` : ''}`;
}

function clientConfig(options: PgOptions): pg.ClientConfig {
  return {
    connectionString: options.connectionString,
    application_name: 'courier',
    // A connection whose server or network vanished without a word (a half-open TCP connection)
    // would otherwise hang its query, and the publishes queued behind it, until the OS gives up.
    keepAlive: true,
    keepAliveInitialDelayMillis: 10_000,
  };
}

export class PgDatabase implements Database {
  readonly kind = 'pg';
  private readonly pool: pg.Pool;
  private listener: PgListener | undefined;
  private readonly server: string;

  constructor(private readonly options: PgOptions) {
    this.server = serverOf(options.connectionString);
    this.pool = new pg.Pool({
      ...clientConfig(options),
      max: options.poolSize ?? 10,
      idleTimeoutMillis: 30_000,
      connectionTimeoutMillis: 5_000,
      // A connection whose settings fail is closed and its error given to the query waiting for it.
      onConnect: async (client) => {
        await client.query(sessionSettings(options.schema));
      },
    });
    // An idle client losing its connection must not crash the process; the next query reports it.
    this.pool.on('error', () => {});
  }

  async query<T>(sql: string, params?: readonly unknown[]): Promise<QueryResult<T>> {
    try {
      const result = await this.pool.query(statement(sql, params));
      return { rows: result.rows as T[], rowCount: result.rowCount ?? 0 };
    } catch (error) {
      throw wrap(error, this.server);
    }
  }

  async transaction<T>(fn: (tx: Transaction) => Promise<T>): Promise<T> {
    let client: pg.PoolClient;
    try {
      client = await this.pool.connect();
    } catch (error) {
      throw wrap(error, this.server);
    }
    const tx: Transaction = {
      [PARENT_DATABASE]: this,
      async query<R>(sql: string, params?: readonly unknown[]) {
        const result = await client.query(statement(sql, params));
        return { rows: result.rows as R[], rowCount: result.rowCount ?? 0 };
      },
      async exec(sql: string) {
        await client.query(sql);
      },
    };
    let broken = false;
    try {
      await client.query('BEGIN');
      const value = await fn(tx);
      await client.query('COMMIT');
      return value;
    } catch (error) {
      broken = isConnectionError(error);
      if (!broken) await client.query('ROLLBACK').catch(() => {});
      throw wrap(error, this.server);
    } finally {
      client.release(broken);
    }
  }

  async listen(
    channel: string,
    onNotify: (payload: string) => void,
    onReconnect?: () => void,
  ): Promise<() => Promise<void>> {
    this.listener ??= new PgListener(this.options);
    return this.listener.subscribe(channel, { onNotify, onReconnect });
  }

  async close(): Promise<void> {
    await this.listener?.close();
    await this.pool.end();
  }
}

interface Subscriber {
  onNotify: (payload: string) => void;
  onReconnect?: () => void;
}

/** One dedicated LISTEN connection that reconnects with capped exponential backoff. */
class PgListener {
  private client: pg.Client | undefined;
  private readonly handlers = new Map<string, Set<Subscriber>>();
  /**
   * A connection tried before: the next one made is a reconnect, after which notifications were
   * missed (also when the first attempt failed: its subscribers have been waiting since).
   */
  private tried = false;
  private closed = false;
  private failures = 0;
  private reconnectTimer: NodeJS.Timeout | undefined;
  private connecting: Promise<void> | undefined;

  constructor(private readonly options: PgOptions) {}

  async subscribe(channel: string, subscriber: Subscriber): Promise<() => Promise<void>> {
    let set = this.handlers.get(channel);
    const isNew = !set;
    if (!set) {
      set = new Set();
      this.handlers.set(channel, set);
    }
    set.add(subscriber);
    const unsubscribe = async () => {
      set.delete(subscriber);
      if (set.size === 0 && this.handlers.get(channel) === set) {
        this.handlers.delete(channel);
        await this.client?.query(`UNLISTEN ${pg.escapeIdentifier(channel)}`).catch(() => {});
      }
    };
    if (!this.client) {
      // Its LISTEN is part of the connection's (the next one's, if this attempt fails).
      this.connecting ??= this.connect();
      await this.connecting;
    } else if (isNew) {
      try {
        await this.client.query(`LISTEN ${pg.escapeIdentifier(channel)}`);
      } catch (error) {
        // Refused: not left subscribed, to be told of reconnects it never asked for.
        await unsubscribe();
        throw error;
      }
    }
    return unsubscribe;
  }

  private async connect(): Promise<void> {
    const client = new pg.Client(clientConfig(this.options));
    client.on('notification', (msg) => {
      for (const subscriber of this.handlers.get(msg.channel) ?? []) subscriber.onNotify(msg.payload ?? '');
    });
    client.on('error', (error) => this.lost(client, error));
    client.on('end', () => this.lost(client, new Error('LISTEN connection ended')));
    const reconnect = this.tried;
    this.tried = true;
    try {
      await client.connect();
      for (const channel of this.handlers.keys())
        await client.query(`LISTEN ${pg.escapeIdentifier(channel)}`);
      // Closed meanwhile, or connected by a subscribe while a reconnect timer was pending: a
      // second connection would deliver every notification twice, and keep the process alive.
      if (this.closed || this.client) {
        await client.end().catch(() => {});
        return;
      }
      this.client = client;
      this.failures = 0;
      // Wake subscribers once: anything notified while we were disconnected was missed.
      for (const [, set] of this.handlers) {
        for (const { onNotify, onReconnect } of set) {
          if (reconnect && onReconnect) onReconnect();
          else onNotify('');
        }
      }
    } catch (error) {
      client.end().catch(() => {});
      this.scheduleReconnect(error as Error);
    } finally {
      this.connecting = undefined;
    }
  }

  private lost(client: pg.Client, error: Error): void {
    if (this.client !== client) return;
    this.client = undefined;
    client.end().catch(() => {});
    this.scheduleReconnect(error);
  }

  private scheduleReconnect(error: Error): void {
    if (this.closed || this.reconnectTimer) return;
    this.failures++;
    // Capped at 5 s, like the workers' claims: a restarted database is heard from within 5 s.
    const delay = Math.min(5_000, 250 * 2 ** Math.min(this.failures - 1, 8));
    // Power-of-two failure counts only: an outage of hours logs a few dozen lines, not thousands.
    if ((this.failures & (this.failures - 1)) === 0) this.options.onListenError?.(error, delay);
    this.reconnectTimer = setTimeout(() => {
      this.reconnectTimer = undefined;
      if (this.client || this.closed) return;
      this.connecting ??= this.connect();
    }, delay);
    this.reconnectTimer.unref();
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.reconnectTimer);
    const client = this.client;
    this.client = undefined;
    await client?.end().catch(() => {});
  }
}
