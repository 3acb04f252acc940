import type { AddressInfo } from 'node:net';
import { createServer } from 'node:net';
import { describe, expect, it } from 'vitest';
import { DatabaseUnavailableError } from '../../src/store/db.ts';
import { PgDatabase } from '../../src/store/pg.ts';
import { TEST_DATABASE_URL } from '../support/databases.ts';

describe('PgDatabase connections', () => {
  it('work in their schema, with JIT off (compiling a plan costs more than any Courier statement)', async () => {
    const db = new PgDatabase({ connectionString: TEST_DATABASE_URL, schema: 'courier_probe', poolSize: 1 });
    try {
      const { rows } = await db.query<{ jit: string; path: string }>(
        `select current_setting('jit') as jit, current_setting('search_path') as path`,
      );
      expect(rows).toEqual([{ jit: 'off', path: 'courier_probe' }]);
    } finally {
      await db.close();
    }
  });

  it('say which server could not be reached, and why, without the password', async () => {
    // A closed port on loopback: every address of "localhost" refuses (an AggregateError on Node 20).
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    await new Promise<void>((resolve) => server.close(() => resolve()));
    for (const host of ['127.0.0.1', 'localhost']) {
      const db = new PgDatabase({
        connectionString: `postgres://courier:s3cret@${host}:${port}/app`,
        poolSize: 1,
      });
      try {
        const error = await db.query('select 1').catch((e: unknown) => e as Error);
        expect(error).toBeInstanceOf(DatabaseUnavailableError);
        expect((error as Error).message).toMatch(
          new RegExp(`^database unavailable \\(${host}:${port}/app\\): .*ECONNREFUSED`),
        );
        expect((error as Error).message).not.toContain('s3cret');
      } finally {
        await db.close();
      }
    }
  });

  it('take a server out of connections (53300) as unavailable, not as a refused statement', async () => {
    const role = `t_courier_role_full_${process.pid}`;
    const admin = new PgDatabase({ connectionString: TEST_DATABASE_URL, poolSize: 1 });
    await admin.query(`create role ${role} login connection limit 0`);
    const url = new URL(TEST_DATABASE_URL);
    url.username = role;
    const db = new PgDatabase({ connectionString: url.toString(), poolSize: 1 });
    try {
      const error = await db.query('select 1').catch((e: unknown) => e as Error);
      expect(error).toBeInstanceOf(DatabaseUnavailableError);
      expect((error as Error).message).toContain('too many connections');
    } finally {
      await db.close();
      await admin.query(`drop role ${role}`);
      await admin.close();
    }
  });
});
