import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HEARING_CHECK_MS, type Wakeups } from '../../src/dispatch/wakeups.ts';
import { PgDatabase } from '../../src/store/pg.ts';
import { openTestDatabase, TEST_DATABASE_URL } from '../support/databases.ts';
import { type PgBouncer, startPgBouncer } from '../support/pgbouncer.ts';
import { freePort } from '../support/ports.ts';
import { wakeupsListeningThrough } from '../support/wakeups.ts';

const CLI = fileURLToPath(new URL('../../bin/courier.js', import.meta.url));
const TOKEN = 'courier_pgbouncer_test_token';

async function direct(sql: string, params: unknown[] = []) {
  const client = new pg.Client(TEST_DATABASE_URL);
  await client.connect();
  try {
    return (await client.query(sql, params)).rows;
  } finally {
    await client.end();
  }
}

// Debian's PgBouncer (1.18) refuses a connection whose startup packet carries options it does not
// track, as `-c jit=off` was: Courier's settings are made once each connection is open.
describe('Courier behind PgBouncer (session pooling)', () => {
  let bouncer: PgBouncer;
  const schemas: string[] = [];
  beforeAll(async () => {
    bouncer = await startPgBouncer('session');
  });
  afterAll(async () => {
    try {
      await bouncer?.stop();
    } finally {
      for (const schema of schemas) await direct(`drop schema if exists ${schema} cascade`);
    }
  });

  it('gives each pooled connection its schema and JIT off, as a direct one', async () => {
    const schema = `t_${randomBytes(6).toString('hex')}`;
    const db = new PgDatabase({ connectionString: bouncer.url, schema, poolSize: 2 });
    try {
      // Two at once: both connections opened through PgBouncer, each set.
      const rows = await Promise.all(
        [1, 2].map(() =>
          db.transaction((tx) =>
            tx.query<{ jit: string; path: string }>(
              `select current_setting('jit') as jit, current_setting('search_path') as path, pg_sleep(0.05)`,
            ),
          ),
        ),
      );
      expect(rows.map((r) => ({ jit: r.rows[0]!.jit, path: r.rows[0]!.path }))).toEqual([
        { jit: 'off', path: schema },
        { jit: 'off', path: schema },
      ]);
    } finally {
      await db.close();
    }
    expect(bouncer.log()).not.toContain('unsupported startup parameter');
  });

  it('runs `courier serve` through it: its schema made and migrated, a message taken and delivered, signed, at a NOTIFY', async () => {
    const schema = `t_${randomBytes(6).toString('hex')}`;
    schemas.push(schema);
    const received: { headers: http.IncomingHttpHeaders; body: string; at: number }[] = [];
    const receiver = http.createServer((req, res) => {
      let body = '';
      req.on('data', (chunk) => (body += chunk));
      req.on('end', () => {
        received.push({ headers: req.headers, body, at: Date.now() });
        res.end('ok');
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    const port = await freePort();
    const child: ChildProcess = spawn(process.execPath, [CLI, 'serve'], {
      env: {
        ...process.env,
        COURIER_DATABASE_URL: bouncer.url,
        COURIER_SCHEMA: schema,
        COURIER_PORT: String(port),
        COURIER_ADMIN_TOKEN: TOKEN,
        COURIER_ALLOW_PRIVATE_NETWORKS: '127.0.0.0/8',
        COURIER_LOG_LEVEL: 'warn',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout!.on('data', (chunk) => (output += chunk));
    child.stderr!.on('data', (chunk) => (output += chunk));
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    try {
      const deadline = Date.now() + 30_000;
      while (!output.includes('API: ')) {
        if (child.exitCode !== null || Date.now() > deadline) {
          throw new Error(`courier serve did not start:\n${output}\n${bouncer.log()}`);
        }
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      const api = async (path: string, body: unknown) => {
        const res = await fetch(`http://127.0.0.1:${port}/api/v1${path}`, {
          method: 'POST',
          headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
          body: JSON.stringify(body),
        });
        expect(res.status, await res.clone().text()).toBeLessThan(300);
        return (await res.json()) as Record<string, unknown>;
      };
      const secret = `whsec_${randomBytes(24).toString('base64')}`;
      const { port: receiverPort } = receiver.address() as AddressInfo;
      await api('/app', { name: 'Behind PgBouncer', uid: 'bounced' });
      await api('/app/bounced/endpoint', { url: `http://127.0.0.1:${receiverPort}/hook`, secret });
      // The worker has claimed nothing and sleeps until woken (its idle timer is 30 s).
      await new Promise((resolve) => setTimeout(resolve, 500));
      const sentAt = Date.now();
      const message = await api('/app/bounced/msg', { eventType: 'invoice.paid', payload: { n: 1 } });
      while (received.length === 0 && Date.now() - sentAt < 5_000) {
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      expect(received).toHaveLength(1);
      expect(received[0]!.at - sentAt).toBeLessThan(5_000);
      expect(received[0]!.headers['webhook-id']).toBe(message.id);
      expect(
        new Webhook(secret).verify(received[0]!.body, received[0]!.headers as Record<string, string>),
      ).toEqual({ n: 1 });
      // Its tables made in its schema, through PgBouncer, the message among them.
      const [{ messages }] = await direct(`select count(*)::int as messages from ${schema}.courier_messages`);
      expect(messages).toBe(1);
      expect(bouncer.log()).not.toContain('unsupported startup parameter');
    } finally {
      child.kill('SIGTERM');
      await exited;
      await new Promise((resolve) => receiver.close(resolve));
    }
    expect(output).not.toMatch(/"level":(50|60)/);
  }, 60_000);
});

/** A worker's wake-ups with their LISTEN connection through PgBouncer, and what they logged. */
async function wakeupsThroughPgBouncer(
  bouncer: PgBouncer,
  run: (w: Wakeups, errors: string[]) => Promise<void>,
) {
  const t = await openTestDatabase('pg');
  const pooled = new PgDatabase({ connectionString: bouncer.url, poolSize: 1 });
  // Statements go straight to PostgreSQL, in the test's schema; the LISTEN goes through PgBouncer.
  const { w, errors } = wakeupsListeningThrough(t.db, pooled);
  try {
    await w.start();
    await run(w, errors);
  } finally {
    await w.stop();
    await pooled.close();
    await t.drop();
  }
}

describe('A worker behind PgBouncer says whether it hears notifications', () => {
  it('hears them through session pooling', async () => {
    const bouncer = await startPgBouncer('session');
    try {
      await wakeupsThroughPgBouncer(bouncer, async (w, errors) => {
        expect(await w.hearing).toBe(true);
        expect(errors).toEqual([]);
      });
    } finally {
      await bouncer.stop();
    }
  });

  it('says so in its log through transaction pooling, which drops every one after the LISTEN', async () => {
    const bouncer = await startPgBouncer('transaction');
    try {
      await wakeupsThroughPgBouncer(bouncer, async (w, errors) => {
        const started = Date.now();
        expect(await w.hearing).toBe(false);
        expect(Date.now() - started).toBeGreaterThanOrEqual(HEARING_CHECK_MS - 100);
        expect(errors).toEqual([
          expect.stringContaining('a connection pooler in transaction mode, which Courier does not support'),
        ]);
      });
      expect(bouncer.log()).toContain('when not linked');
      // Stopped before its check ends: nothing known, nothing said.
      await wakeupsThroughPgBouncer(bouncer, async (w, errors) => {
        await w.stop();
        expect(await w.hearing).toBe(null);
        expect(errors).toEqual([]);
      });
    } finally {
      await bouncer.stop();
    }
  }, 30_000);
});
