import { randomBytes } from 'node:crypto';
import pg from 'pg';
import type { Database } from '../../src/store/db.ts';
import { migrate } from '../../src/store/migrate.ts';
import { PgDatabase } from '../../src/store/pg.ts';
import { PgliteDatabase } from '../../src/store/pglite.ts';

export const TEST_DATABASE_URL =
  process.env.COURIER_TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
export const BACKENDS = ['pg', 'pglite'] as const;
export type Backend = (typeof BACKENDS)[number];

export interface TestDatabase {
  db: Database;
  /** The schema holding this test's tables (pg only); other processes connect with it. */
  schema?: string;
  drop(): Promise<void>;
}

async function admin(sql: string): Promise<void> {
  const client = new pg.Client(TEST_DATABASE_URL);
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

/** A migrated, empty database: a fresh schema on the real PostgreSQL, or an in-memory PGlite. */
export async function openTestDatabase(backend: Backend): Promise<TestDatabase> {
  if (backend === 'pglite') {
    const db = await PgliteDatabase.open();
    await migrate(db);
    return { db, drop: () => db.close() };
  }
  const schema = `t_${randomBytes(6).toString('hex')}`;
  await admin(`create schema ${schema}`);
  const db = new PgDatabase({ connectionString: TEST_DATABASE_URL, schema });
  await migrate(db);
  return {
    db,
    schema,
    async drop() {
      await db.close();
      await admin(`drop schema ${schema} cascade`);
    },
  };
}
