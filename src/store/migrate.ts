import { readdirSync, readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Database } from './db.ts';
import { isConflictAbort } from './errors.ts';

const MIGRATIONS_DIR = new URL('./migrations/', import.meta.url);

export interface Migration {
  version: number;
  name: string;
  sql: string;
}

export function loadMigrations(): Migration[] {
  return readdirSync(MIGRATIONS_DIR)
    .filter((file) => /^\d{4}_[\w-]+\.sql$/.test(file))
    .sort()
    .map((file) => ({
      version: Number(file.slice(0, 4)),
      name: file.replace(/\.sql$/, ''),
      sql: readFileSync(new URL(file, MIGRATIONS_DIR), 'utf8'),
    }));
}

export interface MigrateOptions {
  /** Stop after this version (for upgrade tests). */
  through?: number;
  /** How long a migration may wait for a table's lock before the whole run is undone and tried again. */
  lockTimeoutMs?: number;
  /** Runs tried before giving up; a second of pause more before each retry. */
  tries?: number;
  /** Told of each run undone by a lock wait, before the pause: a start that waits is not silent. */
  onRetry?: (info: { migration: string; attempt: number; pauseMs: number; error: Error }) => void;
}

/** Lock waits that undo a run: lock_timeout (55P03), or a deadlock PostgreSQL broke by aborting it. */
function isLockWait(error: unknown): boolean {
  return (error as { code?: unknown } | null)?.code === '55P03' || isConflictAbort(error);
}

/**
 * Applies the numbered migrations not yet applied, all in one transaction under an advisory
 * lock, so several processes starting at once apply each migration exactly once.
 * Returns the names applied.
 *
 * A migration that alters a hot table waits for its lock behind every transaction using it, and
 * every publish and claim that comes after queues behind the migration: on a live database one
 * long transaction would stall them all. So a run waits at most lockTimeoutMs for any one lock
 * (a deadlock with them ends it too), is undone, and is tried again a little later.
 */
export async function migrate(
  db: Database,
  { through = Number.POSITIVE_INFINITY, lockTimeoutMs = 5_000, tries = 5, onRetry }: MigrateOptions = {},
): Promise<string[]> {
  const migrations = loadMigrations().filter((m) => m.version <= through);
  // Where the run was when it waited: the bookkeeping table, or a migration.
  const at = { migration: '' };
  for (let attempt = 1; ; attempt++) {
    try {
      return await applyPending(db, migrations, lockTimeoutMs, at);
    } catch (error) {
      if (!isLockWait(error)) throw error;
      if (attempt >= tries) {
        throw new Error(
          `migrations not applied: ${tries} tries each waited more than ${lockTimeoutMs} ms for a lock on ` +
            `Courier's tables, or deadlocked with a transaction using them, last in ${at.migration} ` +
            `(${(error as Error).message}). Look for long transactions in pg_stat_activity, then start again.`,
          { cause: error },
        );
      }
      const pauseMs = 1_000 * attempt;
      onRetry?.({ migration: at.migration, attempt, pauseMs, error: error as Error });
      await sleep(pauseMs);
    }
  }
}

function applyPending(
  db: Database,
  migrations: readonly Migration[],
  lockTimeoutMs: number,
  at: { migration: string },
): Promise<string[]> {
  at.migration = 'courier_migrations';
  return db.transaction(async (tx) => {
    // Waiting here is waiting for another process's migrations, which may take long: no timeout yet.
    await tx.query(`select pg_advisory_xact_lock(hashtext('courier_migrations:' || current_schema()))`);
    await tx.query(`select set_config('lock_timeout', $1, true)`, [`${lockTimeoutMs}ms`]);
    await tx.query(
      `create table if not exists courier_migrations (version integer primary key, name text not null, applied_at timestamptz not null default now())`,
    );
    const { rows } = await tx.query<{ version: number }>('select version from courier_migrations');
    const applied = new Set(rows.map((r) => r.version));
    const done: string[] = [];
    for (const migration of migrations) {
      if (applied.has(migration.version)) continue;
      at.migration = migration.name;
      await tx.exec(migration.sql);
      await tx.query('insert into courier_migrations (version, name) values ($1, $2)', [
        migration.version,
        migration.name,
      ]);
      done.push(migration.name);
    }
    return done;
  });
}
