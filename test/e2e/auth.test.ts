import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureAdminToken } from '../../src/api/auth.ts';
import { routesOf } from '../../src/api/server.ts';
import { ManualClock } from '../../src/clock.ts';
import type { Logger } from '../../src/logger.ts';
import { openTestDatabase, type TestDatabase } from '../support/databases.ts';
import { startApi, type TestApi, testConfig } from './support.ts';

const PUBLIC = ['/health', '/health/ready', '/api/v1/health', '/openapi.json', '/docs', '/portal'];

describe('authentication on every route', () => {
  let api: TestApi;
  beforeAll(async () => {
    api = await startApi();
  });
  afterAll(() => api.close());

  it('knows the route table', () => {
    const routes = routesOf(api.app);
    // The table is what Fastify registered: compare with its own lookup, and with a few known routes.
    for (const route of routes)
      expect(api.app.hasRoute({ method: route.method as 'GET', url: route.url })).toBe(true);
    const names = routes.map((r) => `${r.method} ${r.url}`);
    expect(names).toEqual(
      expect.arrayContaining([
        'POST /api/v1/app/:app_id/msg',
        'POST /api/v1/app/:app_id/msg/:msg_id/endpoint/:endpoint_id/resend',
        'PATCH /api/v1/app/:app_id/endpoint/:endpoint_id/headers',
        'GET /api/v1/operational-event',
      ]),
    );
    expect(routes.length).toBeGreaterThan(40);
    expect(
      routes
        .filter((r) => r.public)
        .map((r) => r.url)
        .sort(),
    ).toEqual(
      PUBLIC.flatMap((u) => [u, u]).sort(), // GET and HEAD each
    );
  });

  it('answers 401 JSON without a token, and with a wrong one, on every non-public route', async () => {
    const guarded = routesOf(api.app).filter((r) => !r.public);
    for (const route of guarded) {
      const path = route.url.replace(/:(\w+)/g, (_m, name: string) => `some_${name}`);
      for (const token of [null, 'wrong-token-0123456789']) {
        const res = await api.request(route.method, path, {
          token,
          ...(['POST', 'PUT', 'PATCH'].includes(route.method) ? { body: {} } : {}),
        });
        expect(res.status, `${route.method} ${route.url} with ${token ?? 'no token'}`).toBe(401);
        if (route.method !== 'HEAD') {
          expect(res.headers.get('content-type')).toMatch(/^application\/json/);
          expect(res.body).toMatchObject({ code: 'authentication_failed', detail: expect.any(String) });
        }
      }
    }
  });

  it('refuses other schemes and malformed headers', async () => {
    for (const authorization of ['Basic dGVzdA==', 'Bearer', 'test-token-0123456789', 'Bearer a b']) {
      const res = await api.request('GET', '/api/v1/app', { token: null, headers: { authorization } });
      expect(res.status, authorization).toBe(401);
    }
    const ok = await api.request('GET', '/api/v1/app', {
      token: null,
      headers: { authorization: 'bearer test-token-0123456789' },
    });
    expect(ok.status).toBe(200);
  });

  it('serves health, the OpenAPI document and the docs page without a token', async () => {
    for (const path of PUBLIC) {
      const res = await api.request('GET', path, { token: null });
      expect(res.status, path).toBeLessThan(300);
    }
  });
});

describe('admin token', () => {
  let t: TestDatabase;
  beforeAll(async () => {
    t = await openTestDatabase('pg');
  });
  afterAll(() => t.drop());

  it('is generated once when none is configured, stored only as a hash, and accepted', async () => {
    const config = { ...testConfig(), adminToken: null };
    const clock = new ManualClock();
    const first = await ensureAdminToken(t.db, config, clock);
    expect(first.created).toMatch(/^courier_[A-Za-z0-9_-]{43}$/);
    expect(await ensureAdminToken(t.db, config, clock)).toEqual({ created: null });

    const { rows } = await t.db.query<{ token_hash: Buffer }>('select token_hash from courier_api_tokens');
    expect(rows).toHaveLength(1);
    // Exactly the raw SHA-256 digest of the token (bytea), computed here rather than with hashToken.
    const digest = createHash('sha256').update(first.created!, 'utf8').digest('hex');
    expect(rows[0]!.token_hash.toString('hex')).toBe(digest);

    const lines: unknown[] = [];
    const capture = (obj: object, msg?: string) => lines.push([obj, msg]);
    const logger: Logger = { info: capture, warn: capture, error: capture, debug: capture };
    const api = await startApi({ database: t, env: { COURIER_ADMIN_TOKEN: '' }, logger });
    try {
      expect((await api.request('GET', '/api/v1/app', { token: first.created })).status).toBe(200);
      expect((await api.request('GET', '/api/v1/app', { token: 'courier_not-the-token' })).status).toBe(401);
      expect(
        (await api.request('POST', '/api/v1/app', { token: first.created, body: { name: 'x' } })).status,
      ).toBe(201);
    } finally {
      await api.close();
    }
    // Requests were logged, and the token never was.
    expect(lines.length).toBeGreaterThanOrEqual(3);
    expect(JSON.stringify(lines)).not.toContain(first.created);
  });

  it('is the configured one when COURIER_ADMIN_TOKEN is set (nothing generated)', async () => {
    const other = await openTestDatabase('pg');
    try {
      expect(await ensureAdminToken(other.db, testConfig(), new ManualClock())).toEqual({ created: null });
      const { rows } = await other.db.query('select * from courier_api_tokens');
      expect(rows).toHaveLength(0);
    } finally {
      await other.drop();
    }
  });

  it('is created exactly once by concurrent first starts', async () => {
    const other = await openTestDatabase('pg');
    try {
      const config = { ...testConfig(), adminToken: null };
      const results = await Promise.all(
        Array.from({ length: 5 }, () => ensureAdminToken(other.db, config, new ManualClock())),
      );
      expect(results.filter((r) => r.created !== null)).toHaveLength(1);
    } finally {
      await other.drop();
    }
  });
});
