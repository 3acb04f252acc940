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

  it('get their LISTEN connection back when the server cuts it: said, each subscriber told once, heard again', async () => {
    const channel = `t_courier_listen_${process.pid}_${Date.now()}`;
    const retries: number[] = [];
    const db = new PgDatabase({
      connectionString: TEST_DATABASE_URL,
      poolSize: 1,
      onListenError: (_error, retryInMs) => retries.push(retryInMs),
    });
    const told: string[] = [];
    const plain: string[] = [];
    try {
      await db.listen(
        channel,
        (payload) => told.push(payload),
        () => told.push('reconnected'),
      );
      // Connected the first time: woken as by an empty notification, not told of a reconnect.
      expect(told).toEqual(['']);
      // Without its own callback, a subscriber is woken as by an empty notification.
      await db.listen(channel, (payload) => plain.push(payload));
      told.length = 0;
      plain.length = 0;
      const cut = await db.query('select pg_terminate_backend(pid) from pg_stat_activity where query = $1', [
        `LISTEN "${channel}"`,
      ]);
      expect(cut.rowCount).toBe(1);
      for (let i = 0; i < 300 && told.length === 0; i++) await new Promise((r) => setTimeout(r, 10));
      expect([told, plain, retries]).toEqual([['reconnected'], [''], [250]]);
      await db.query(`select pg_notify($1, 'after')`, [channel]);
      for (let i = 0; i < 300 && told.length === 1; i++) await new Promise((r) => setTimeout(r, 10));
      expect([told, plain]).toEqual([
        ['reconnected', 'after'],
        ['', 'after'],
      ]);
    } finally {
      await db.close();
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
