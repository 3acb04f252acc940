import { randomBytes } from 'node:crypto';
import { readdirSync } from 'node:fs';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.ts';
import { receiverHost } from '../../src/delivery/receiver-host.ts';
import { silentLogger } from '../../src/logger.ts';
import { openDatabase, openMigratedDatabase } from '../../src/runtime.ts';
import { prepared } from '../../src/store/db.ts';
import { loadMigrations, migrate } from '../../src/store/migrate.ts';
import { PgDatabase } from '../../src/store/pg.ts';
import { findAppToken } from '../../src/store/repos/app-tokens.ts';
import { findEventType } from '../../src/store/repos/event-types.ts';
import { TEST_DATABASE_URL } from '../support/databases.ts';

describe('migrations', () => {
  const schema = `t_mig_${randomBytes(4).toString('hex')}`;
  const admin = async (sql: string) => {
    const client = new pg.Client(TEST_DATABASE_URL);
    await client.connect();
    await client.query(sql);
    await client.end();
  };
  afterAll(() => admin(`drop schema if exists ${schema} cascade`));

  it('start on a schema that does not exist yet, several processes together', async () => {
    // Concurrent "create schema if not exists" race: the loser failed as a duplicate. Each process
    // then migrates (as `courier serve` starts), and must find every migration file applied.
    const fresh = `t_mig_${randomBytes(4).toString('hex')}`;
    const config = loadConfig({ COURIER_DATABASE_URL: TEST_DATABASE_URL, COURIER_SCHEMA: fresh });
    // Read from the directory itself, not through loadMigrations, which is under test here.
    const files = readdirSync(new URL('../../src/store/migrations/', import.meta.url))
      .filter((file) => file.endsWith('.sql'))
      .sort()
      .map((file) => ({ version: Number(file.slice(0, 4)), name: file.replace(/\.sql$/, '') }));
    expect(files.length).toBeGreaterThan(20);
    try {
      for (let round = 0; round < 3; round++) {
        await admin(`drop schema if exists ${fresh} cascade`);
        const dbs = await Promise.all(
          [0, 1, 2, 3, 4, 5].map(() => openMigratedDatabase(config, silentLogger)),
        );
        try {
          for (const db of dbs) {
            const { rows } = await db.query<{ schema: string; version: number; name: string }>(
              `select current_schema() as schema, version, name from ${fresh}.courier_migrations order by version`,
            );
            expect(rows).toEqual(files.map((file) => ({ schema: fresh, ...file })));
          }
        } finally {
          await Promise.all(dbs.map((db) => db.close()));
        }
      }
    } finally {
      await admin(`drop schema if exists ${fresh} cascade`);
    }
  });

  it('start in a schema named by a reserved word, which the configuration allows', async () => {
    const config = loadConfig({ COURIER_DATABASE_URL: TEST_DATABASE_URL, COURIER_SCHEMA: 'limit' });
    await admin('drop schema if exists "limit" cascade');
    try {
      const db = await openMigratedDatabase(config, silentLogger);
      try {
        const { rows } = await db.query<{ schema: string; n: number }>(
          'select current_schema() as schema, count(*)::int as n from courier_migrations',
        );
        expect(rows).toEqual([{ schema: 'limit', n: loadMigrations().length }]);
      } finally {
        await db.close();
      }
    } finally {
      await admin('drop schema if exists "limit" cascade');
    }
  });

  it('start in a schema a DBA made for a role that may not create schemas', async () => {
    const role = `t_courier_role_${randomBytes(3).toString('hex')}`;
    const own = `t_mig_${randomBytes(4).toString('hex')}`;
    await admin(`create role ${role} login`);
    try {
      await admin(`create schema ${own} authorization ${role}`);
      const url = new URL(TEST_DATABASE_URL);
      url.username = role;
      url.password = '';
      const config = loadConfig({ COURIER_DATABASE_URL: url.toString(), COURIER_SCHEMA: own });
      const db = await openDatabase(config, silentLogger);
      try {
        expect((await migrate(db)).length).toBeGreaterThan(0);
      } finally {
        await db.close();
      }
    } finally {
      await admin(`drop schema if exists ${own} cascade`);
      await admin(`drop role ${role}`);
    }
  });

  it('are numbered files applied once, even by several processes starting together', async () => {
    const names = loadMigrations().map((m) => m.name);
    expect(names[0]).toBe('0001_schema');
    expect(names).toEqual([...names].sort());
    await admin(`create schema ${schema}`);
    // Separate pools stand in for separate processes: each has its own connections.
    const dbs = [0, 1, 2, 3].map(
      () => new PgDatabase({ connectionString: TEST_DATABASE_URL, schema, poolSize: 1 }),
    );
    try {
      const applied = await Promise.all(dbs.map((db) => migrate(db)));
      expect(applied.flat().sort()).toEqual([...names].sort());
      expect(applied.filter((a) => a.length > 0)).toHaveLength(1);
      const { rows } = await dbs[0]!.query<{ version: number }>(
        'select version from courier_migrations order by 1',
      );
      expect(rows.map((r) => r.version)).toEqual(loadMigrations().map((m) => m.version));
      expect(await migrate(dbs[1]!)).toEqual([]);
    } finally {
      await Promise.all(dbs.map((db) => db.close()));
    }
  });

  it('leave the attempt log two indexes, keyed within the message (one insertion fewer per completion)', async () => {
    const db = new PgDatabase({ connectionString: TEST_DATABASE_URL, schema, poolSize: 1 });
    try {
      await migrate(db);
      const { rows } = await db.query<{ indexdef: string }>(
        `select indexdef from pg_indexes where schemaname = $1 and tablename = 'courier_attempts' order by indexname`,
        [schema],
      );
      expect(rows.map((r) => r.indexdef.replace(/^.* USING /, ''))).toEqual([
        'btree (endpoint_id, id)',
        'btree (message_id, id)',
      ]);
      const insert = `insert into courier_attempts (id, delivery_id, message_id, endpoint_id, number, url,
          started_at, duration_ms, decision, detail)
        values ('atmpt_1', 1, 'msg_1', 'ep_1', 1, 'http://x', now(), 1, 'delivered', 'ok')`;
      await db.query(insert);
      await expect(db.query(insert)).rejects.toThrow(/duplicate key/);
    } finally {
      await db.close();
    }
  });

  it('refuse to delete a message that still has deliveries (no foreign key does it since 0023)', async () => {
    const db = new PgDatabase({ connectionString: TEST_DATABASE_URL, schema, poolSize: 1 });
    try {
      await migrate(db);
      await db.query(`insert into courier_applications (id, name, created_at, updated_at)
                        values ('app_fk', 'a', now(), now());
                      insert into courier_endpoints (id, app_id, url, rate_limit, max_in_flight, created_at, updated_at)
                        values ('ep_fk', 'app_fk', 'http://x', 10, 10, now(), now());
                      insert into courier_messages (id, app_id, event_type, payload, created_at)
                        values ('msg_fk1', 'app_fk', 'e', '\\x7b7d', now()), ('msg_fk2', 'app_fk', 'e', '\\x7b7d', now());
                      insert into courier_deliveries (message_id, endpoint_id, state, next_attempt_at, created_at, updated_at)
                        values ('msg_fk2', 'ep_fk', 'failed', now(), now(), now())`);
      await expect(db.query(`delete from courier_messages where id like 'msg_fk%'`)).rejects.toMatchObject({
        code: '23503',
        message: 'message msg_fk2 still has deliveries: delete them first',
      });
      await db.query(`delete from courier_deliveries where message_id = 'msg_fk2'`);
      const { rowCount } = await db.query(`delete from courier_messages where id like 'msg_fk%'`);
      expect(rowCount).toBe(2);
    } finally {
      await db.close();
    }
  });

  it('wait a bounded time for a table lock, undo the run and try again, and say so when they give up', async () => {
    const upgrade = `${schema}_lock`;
    await admin(`create schema ${upgrade}`);
    const db = new PgDatabase({ connectionString: TEST_DATABASE_URL, schema: upgrade, poolSize: 1 });
    const holder = new pg.Client(TEST_DATABASE_URL);
    await holder.connect();
    try {
      await migrate(db, { through: 22 });
      // A long transaction reading the deliveries: 0023 needs them to itself.
      await holder.query(`begin; lock table ${upgrade}.courier_deliveries in access share mode`);
      const retries: unknown[] = [];
      const onRetry = ({
        migration,
        attempt,
        pauseMs,
      }: {
        migration: string;
        attempt: number;
        pauseMs: number;
      }) => retries.push({ migration, attempt, pauseMs });
      await expect(migrate(db, { lockTimeoutMs: 100, tries: 2, onRetry })).rejects.toThrow(
        /^migrations not applied: 2 tries each waited more than 100 ms for a lock .*last in 0023_publish_leaner \(.*lock timeout\)/,
      );
      expect(retries).toEqual([{ migration: '0023_publish_leaner', attempt: 1, pauseMs: 1_000 }]);
      expect((await db.query('select max(version)::int as v from courier_migrations')).rows[0]).toEqual({
        v: 22,
      });
      // Let go while the runs are retried: the next one applies it.
      const applying = migrate(db, { lockTimeoutMs: 100, tries: 3 });
      await new Promise((resolve) => setTimeout(resolve, 300));
      await holder.query('rollback');
      // 0023 and every migration after it.
      expect(await applying).toEqual(
        loadMigrations()
          .filter((m) => m.version >= 23)
          .map((m) => m.name),
      );
    } finally {
      await holder.end();
      await db.close();
      await admin(`drop schema if exists ${upgrade} cascade`);
    }
  });

  it("upgrading to 0030 gives earlier endpoints' queue rows the host the API now sets, or none", async () => {
    const upgrade = `${schema}_hosts`;
    await admin(`create schema ${upgrade}`);
    const db = new PgDatabase({ connectionString: TEST_DATABASE_URL, schema: upgrade, poolSize: 1 });
    const plain = [
      'https://Hooks.Example.COM/in?x=1',
      'http://example.com:80/a',
      'http://example.com:8080',
      'https://example.com.:0443/#f',
      'https://10.0.0.5/',
      'http://[::1]:9000/x',
    ];
    // Read otherwise by the URL parser (a number as IPv4, punycode, a backslash ending the host).
    const unread = ['http://167772165/', 'https://bücher.de/', 'https://evil.example\\@victim.example/'];
    try {
      await migrate(db, { through: 29 });
      const urls = [...plain, ...unread];
      await db.query(
        `insert into courier_applications (id, name, created_at, updated_at) values ('app_1', 'a', now(), now())`,
      );
      for (const [i, url] of urls.entries()) {
        await db.query(
          `insert into courier_endpoints (id, app_id, url, rate_limit, max_in_flight, created_at, updated_at)
             values ($1, 'app_1', $2, 10, 10, now(), now())`,
          [`ep_${i}`, url],
        );
        await db.query(
          `insert into courier_endpoint_queues (endpoint_id, active, max_in_flight, rate_limit) values ($1, true, 10, 10)`,
          [`ep_${i}`],
        );
      }
      expect(await migrate(db)).toContain('0030_host_cap');
      const { rows } = await db.query<{ url: string; host: string | null }>(
        `select e.url, q.host from courier_endpoints e join courier_endpoint_queues q on q.endpoint_id = e.id
         order by length(e.id), e.id`,
      );
      expect(rows.map((r) => r.host)).toEqual([...plain.map(receiverHost), null, null, null]);
    } finally {
      await db.close();
      await admin(`drop schema if exists ${upgrade} cascade`);
    }
  });

  it('upgrading to 0031 leaves the completion statement a worker of the previous release prepared working', async () => {
    const upgrade = `${schema}_failing`;
    await admin(`create schema ${upgrade}`);
    // One connection: the statement is prepared on the one the migration then runs on.
    const db = new PgDatabase({ connectionString: TEST_DATABASE_URL, schema: upgrade, poolSize: 1 });
    // Under the name it had then (prepared() keys statements by their text).
    const previous = prepared(
      'courier_complete_rows',
      `select c.endpoint_id, c.failure_streak, c.alarm, c.claimable, c.wake_at
         from courier_complete_rows($1, $2, $3, $4) c`,
    );
    const values = ['w', new Date(), '[]', 100];
    try {
      await migrate(db, { through: 30 });
      expect((await db.query(previous, values)).rows).toEqual([]);
      expect(await migrate(db)).toContain('0031_failing_since');
      expect((await db.query(previous, values)).rows).toEqual([]);
      const { rows } = await db.query<{ n: number }>(
        `select count(*)::int as n from information_schema.columns
          where table_schema = $1 and table_name = 'courier_endpoint_queues'
            and column_name in ('failing_since', 'last_failure_at')`,
        [upgrade],
      );
      expect(rows).toEqual([{ n: 2 }]);
    } finally {
      await db.close();
      await admin(`drop schema if exists ${upgrade} cascade`);
    }
  });

  it("upgrading to 0036 keeps earlier endpoints the operator's, and makes an older release's new ones public-only", async () => {
    const upgrade = `${schema}_public`;
    await admin(`create schema ${upgrade}`);
    const db = new PgDatabase({ connectionString: TEST_DATABASE_URL, schema: upgrade, poolSize: 1 });
    // As the previous release writes an endpoint: without the column.
    const insert = (id: string) =>
      db.query(
        `insert into courier_endpoints (id, app_id, url, rate_limit, max_in_flight, created_at, updated_at)
         values ($1, 'app_1', 'http://10.0.0.5/', 10, 10, now(), now())`,
        [id],
      );
    try {
      await migrate(db, { through: 35 });
      await db.query(
        `insert into courier_applications (id, name, created_at, updated_at) values ('app_1', 'a', now(), now())`,
      );
      await insert('ep_before');
      expect(await migrate(db)).toContain('0036_public_only_endpoints');
      await insert('ep_during');
      const { rows } = await db.query<{ endpoint_id: string; public_only: boolean }>(
        `select endpoint_id, public_only from courier_endpoint_configs(array['ep_before', 'ep_during'], now())
         order by endpoint_id`,
      );
      expect(rows).toEqual([
        { endpoint_id: 'ep_before', public_only: false },
        { endpoint_id: 'ep_during', public_only: true },
      ]);
    } finally {
      await db.close();
      await admin(`drop schema if exists ${upgrade} cascade`);
    }
  });

  it('upgrading to 0037 shows earlier event types to every token, and gives tokens of any release no flags', async () => {
    const upgrade = `${schema}_flags`;
    await admin(`create schema ${upgrade}`);
    const db = new PgDatabase({ connectionString: TEST_DATABASE_URL, schema: upgrade, poolSize: 1 });
    // As the previous release writes a token: without the column.
    const insertToken = (hash: Buffer) =>
      db.query(
        `insert into courier_app_tokens (app_id, token_hash, capabilities, created_at, expires_at)
         values ('app_1', $1, array['ViewBase'], now(), now() + interval '1 hour')`,
        [hash],
      );
    try {
      await migrate(db, { through: 36 });
      await db.query(
        `insert into courier_applications (id, name, created_at, updated_at) values ('app_1', 'a', now(), now());
         insert into courier_event_types (name, created_at, updated_at) values ('e.before', now(), now())`,
      );
      await insertToken(Buffer.alloc(32, 1));
      expect(await migrate(db)).toContain('0037_event_type_feature_flags');
      await insertToken(Buffer.alloc(32, 2));
      for (const fill of [1, 2])
        expect((await findAppToken(db, Buffer.alloc(32, fill)))?.featureFlags).toEqual([]);
      expect((await findEventType(db, 'e.before'))?.featureFlags).toBeNull();
    } finally {
      await db.close();
      await admin(`drop schema if exists ${upgrade} cascade`);
    }
  });

  it('upgrading to 0011 leaves deliveries delivered before it to the attempt log, and shows them as delivered', async () => {
    const upgrade = `${schema}_up`;
    await admin(`create schema ${upgrade}`);
    const db = new PgDatabase({ connectionString: TEST_DATABASE_URL, schema: upgrade, poolSize: 1 });
    try {
      await migrate(db, { through: 10 });
      await db.query(`insert into courier_applications (id, name, created_at, updated_at)
                        values ('app_1', 'a', now(), now());
                      insert into courier_endpoints (id, app_id, url, rate_limit, max_in_flight, created_at, updated_at)
                        values ('ep_1', 'app_1', 'http://x', 10, 10, now(), now());
                      insert into courier_messages (id, app_id, event_type, payload, created_at)
                        values ('msg_1', 'app_1', 'e', '\\x7b7d', now()), ('msg_2', 'app_1', 'e', '\\x7b7d', now());
                      insert into courier_deliveries (id, message_id, endpoint_id, state, attempts, next_attempt_at, created_at, updated_at)
                        overriding system value
                        values (1, 'msg_1', 'ep_1', 'delivered', 2, now(), now(), now()),
                               (2, 'msg_2', 'ep_1', 'failed', 1, now(), now(), now());
                      insert into courier_attempts (id, delivery_id, message_id, endpoint_id, number, url, started_at,
                                                    duration_ms, decision, detail)
                        values ('atmpt_1', 1, 'msg_1', 'ep_1', 1, 'http://x', now(), 1, 'retry', '503'),
                               ('atmpt_2', 1, 'msg_1', 'ep_1', 2, 'http://x', now(), 1, 'delivered', 'ok'),
                               ('atmpt_3', 2, 'msg_2', 'ep_1', 1, 'http://x', now(), 1, 'failed', '410')`);
      expect(await migrate(db)).toContain('0011_delivered_leave_queue');
      const { rows: queued } = await db.query('select id, state from courier_deliveries');
      expect(queued).toEqual([{ id: 2, state: 'failed' }]);
      const { rows: states } = await db.query(
        'select id, state, attempts from courier_delivery_states order by id',
      );
      expect(states).toEqual([
        { id: 1, state: 'delivered', attempts: 2 },
        { id: 2, state: 'failed', attempts: 1 },
      ]);
    } finally {
      await db.close();
      await admin(`drop schema if exists ${upgrade} cascade`);
    }
  });
});
