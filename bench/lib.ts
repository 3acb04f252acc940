/** Shared plumbing of the benchmark: child processes, the receiver, PostgreSQL counters. */
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { cliEntry } from '../bin/entry.js';
import type { Database } from '../src/store/db.ts';
import { migrate } from '../src/store/migrate.ts';
import { PgDatabase } from '../src/store/pg.ts';
import { PgliteDatabase } from '../src/store/pglite.ts';

export const DATABASE_URL =
  process.env.COURIER_BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
/**
 * tsx as a loader inside the one process, not its CLI: the CLI runs the script in a child process
 * of its own, so a SIGKILL (bounds, a failed run) killed the wrapper and left the script running.
 */
const TSX_LOADER = import.meta.resolve('tsx');
type CliEntry = ReturnType<typeof cliEntry>;

/**
 * Returns the CLI entry every Courier process of a run starts, chosen at the first call and kept:
 * bin/courier.js decides afresh at each start, so a source edited while a run went on switched its
 * later processes to the TypeScript sources, whose tsx loader thread cost each of them about 30 MiB
 * more (`courier serve` 182–191 MiB against 138–155 compiled) and CPU.
 */
export function pinnedCliEntry(root: string): () => CliEntry {
  let entry: CliEntry | undefined;
  return () => {
    entry ??= cliEntry(root);
    return entry;
  };
}
/**
 * This checkout's CLI: compiled when dist/ is up to date at the first call (the full bench builds
 * it first), else its sources through tsx.
 */
export const courierCli = pinnedCliEntry(fileURLToPath(new URL('..', import.meta.url)));
/** How a report or a log names the entry a run took. */
export const cliWording = (entry: CliEntry): string =>
  entry.compiled
    ? 'compiled (dist/)'
    : 'its TypeScript sources through tsx (dist/ older than src/, or absent)';
/** Courier's processes by command line, for CPU per delivery: this checkout's entry, or another's bin/courier.js (bench:ab). */
export const COURIER_PROCESS = /bin\/courier\.js|dist\/cli\/main\.js|src\/cli\/main\.ts/;

export interface Child {
  proc: ChildProcess;
  output: () => string;
  /** Neither exited nor killed by a signal yet. */
  running: () => boolean;
  exited: Promise<number | null>;
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/**
 * Runs a script (`args[0]`, then its arguments), TypeScript through tsx's loader or JavaScript (the
 * compiled CLI), as a child process, with node's own flags (--cpu-prof, --trace-gc) before it.
 */
export function spawnChild(
  args: string[],
  env: Record<string, string> = {},
  nodeFlags: string[] = [],
): Child {
  const loader = args[0]?.endsWith('.ts') ? ['--import', TSX_LOADER] : [];
  const proc = spawn(process.execPath, [...nodeFlags, ...loader, ...args], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  proc.stdout!.on('data', (c) => (out += c));
  proc.stderr!.on('data', (c) => (out += c));
  const exited = new Promise<number | null>((resolve) => proc.on('exit', (code) => resolve(code)));
  const running = () => proc.exitCode === null && proc.signalCode === null;
  return {
    proc,
    output: () => out,
    running,
    exited,
    async stop(signal = 'SIGTERM') {
      if (running()) proc.kill(signal);
      return exited;
    },
  };
}

export async function waitFor(
  check: () => boolean | Promise<boolean>,
  timeoutMs: number,
  what: string,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`benchmark: timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

export interface ReceiverStats {
  count: number;
  first: number;
  last: number;
  latencies: number[];
}

export interface BenchReceiver {
  url: string;
  stats(): Promise<ReceiverStats>;
  reset(): Promise<void>;
  /** Waits until n requests arrived; returns deliveries per second between first and last arrival. */
  rate(n: number, timeoutMs?: number): Promise<number>;
  stop(): Promise<void>;
}

export async function startReceiver(): Promise<BenchReceiver> {
  const child = spawnChild([fileURLToPath(new URL('./receiver.ts', import.meta.url))]);
  await waitFor(() => /\d+\n/.test(child.output()), 20_000, 'the receiver');
  const url = `http://127.0.0.1:${child.output().trim()}`;
  const stats = async () => (await (await fetch(`${url}/_stats`)).json()) as ReceiverStats;
  return {
    url,
    stats,
    async reset() {
      await fetch(`${url}/_reset`);
    },
    async rate(n, timeoutMs = 300_000) {
      let s = await stats();
      await waitFor(
        async () => {
          s = await stats();
          return s.count >= n;
        },
        timeoutMs,
        `${n} deliveries (have ${s.count})`,
      );
      return (s.count - 1) / ((s.last - s.first) / 1000);
    },
    async stop() {
      await child.stop();
    },
  };
}

export async function adminQuery<T = Record<string, unknown>>(
  sql: string,
  params: unknown[] = [],
): Promise<T[]> {
  const client = new pg.Client(DATABASE_URL);
  await client.connect();
  try {
    return (await client.query(sql, params)).rows as T[];
  } finally {
    await client.end();
  }
}

/**
 * Planner statistics (and, with vacuum, a clean heap) for one schema's tables only: a bare
 * ANALYZE or VACUUM covers the whole database and waits behind any other session's lock on any
 * table, which in a test run is another test file's schema.
 */
export async function analyzeSchema(schema: string, { vacuum = false } = {}): Promise<void> {
  const tables = await adminQuery<{ t: string }>(
    `select quote_ident(schemaname) || '.' || quote_ident(relname) as t from pg_stat_user_tables where schemaname = $1`,
    [schema],
  );
  for (const { t } of tables) await adminQuery(`${vacuum ? 'vacuum analyze' : 'analyze'} ${t}`);
}

export async function freshSchema(prefix: string): Promise<string> {
  const schema = `${prefix}_${randomBytes(4).toString('hex')}`;
  await adminQuery(`create schema ${schema}`);
  return schema;
}

export async function dropSchema(schema: string): Promise<void> {
  await adminQuery(`drop schema if exists ${schema} cascade`);
}

/**
 * A migrated, empty store for a bench of the store alone: PostgreSQL in a schema of its own (named
 * after `prefix`), or PGlite in memory; and how to analyse and drop it. Dropped if it cannot be
 * migrated.
 */
export async function openStore(
  prefix: string,
  embedded: boolean,
): Promise<{ db: Database; analyze(): Promise<void>; drop(): Promise<void> }> {
  if (embedded) {
    const db = await PgliteDatabase.open();
    const store = { db, analyze: async () => void (await db.query('analyze')), drop: () => db.close() };
    return migrated(store);
  }
  const schema = await freshSchema(prefix);
  const db = new PgDatabase({ connectionString: DATABASE_URL, schema });
  return migrated({
    db,
    analyze: () => analyzeSchema(schema),
    async drop() {
      await db.close();
      await dropSchema(schema);
    },
  });
}

async function migrated<T extends { db: Database; drop(): Promise<void> }>(store: T): Promise<T> {
  try {
    await migrate(store.db);
    return store;
  } catch (error) {
    await store.drop();
    throw error;
  }
}

/** The server's WAL position in bytes: the difference of two readings is the WAL written between. */
export async function walBytes(): Promise<number> {
  const rows = await adminQuery<{ b: string }>(
    `select pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::text as b`,
  );
  return Number(rows[0]!.b);
}

/** Peak resident memory of a process in MiB (VmHWM), or null if it is gone. */
export function peakRssMiB(pid: number | undefined): number | null {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = Number(/VmHWM:\s+(\d+)/.exec(status)?.[1]);
    return Math.round(kb / 1024);
  } catch {
    return null;
  }
}

/** Runs task(0…n-1) with `concurrency` in flight; returns how many per second completed. */
export async function concurrently(
  n: number,
  concurrency: number,
  task: (i: number) => Promise<unknown>,
): Promise<number> {
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < n) await task(next++);
    }),
  );
  return n / ((performance.now() - started) / 1000);
}

export function percentile(values: number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

/** A 1 KiB JSON payload; `t` first, so the receiver reads it without parsing. */
export function payload(t = 0, size = 1024): string {
  const head = `{"t":${t.toFixed(3)},"pad":"`;
  return `${head}${'x'.repeat(Math.max(0, size - head.length - 2))}"}`;
}

/**
 * Milliseconds on CLOCK_MONOTONIC, which every process on the machine shares (Linux): a send stamped
 * here and an arrival stamped in the receiver's process subtract exactly. Each process's
 * performance.timeOrigin is its own reading of the wall clock, which NTP may be slewing.
 */
export const preciseNow = () => Number(process.hrtime.bigint()) / 1e6;
