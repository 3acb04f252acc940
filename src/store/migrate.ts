import { readdirSync, readFileSync } from 'node:fs';
import type { Database } from './db.ts';

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

/**
 * Applies the numbered migrations not yet applied, all in one transaction under an advisory
 * lock, so several processes starting at once apply each migration exactly once.
 * Returns the names applied. `through` stops after that version (for upgrade tests).
 */
export async function migrate(db: Database, through = Number.POSITIVE_INFINITY): Promise<string[]> {
  const migrations = loadMigrations().filter((m) => m.version <= through);
  return db.transaction(async (tx) => {
    await tx.query(`select pg_advisory_xact_lock(hashtext('courier_migrations:' || current_schema()))`);
    await tx.query(
      `create table if not exists courier_migrations (version integer primary key, name text not null, applied_at timestamptz not null default now())`,
    );
    const { rows } = await tx.query<{ version: number }>('select version from courier_migrations');
    const applied = new Set(rows.map((r) => r.version));
    const done: string[] = [];
    for (const migration of migrations) {
      if (applied.has(migration.version)) continue;
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
