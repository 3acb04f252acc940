/** Bad input of every kind gets a JSON error with a stable code: never HTML, never a 500. */
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildServer } from '../../src/api/server.ts';
import { ManualClock } from '../../src/clock.ts';
import { PgDatabase } from '../../src/store/pg.ts';
import { freePort } from '../support/ports.ts';
import { createApp, locs, startApi, type TestApi, TOKEN, testConfig } from './support.ts';

describe('errors', () => {
  let api: TestApi;
  let appId: string;
  beforeAll(async () => {
    api = await startApi({ env: { COURIER_MAX_PAYLOAD: '2048' } });
    appId = await createApp(api);
  });
  afterAll(() => api.close());

  const expectJson = (res: { headers: Headers }) =>
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);

  it('400 for malformed JSON and an empty JSON body', async () => {
    for (const raw of ['{"name": ', '', '[1,', '{"__proto__": {"x": 1}}']) {
      const res = await api.request('POST', '/api/v1/app', {
        raw,
        headers: { 'content-type': 'application/json' },
      });
      expect(res.status, raw).toBe(400);
      expectJson(res);
      expect(res.body.code).toBe('invalid_json');
    }
  });

  it('413 for a body over COURIER_MAX_PAYLOAD', async () => {
    const res = await api.request('POST', `/api/v1/app/${appId}/msg`, {
      body: { eventType: 'big', payload: { blob: 'x'.repeat(4096) } },
    });
    expect(res.status).toBe(413);
    expectJson(res);
    expect(res.body.code).toBe('payload_too_large');
  });

  it('415 for a body that is not JSON', async () => {
    for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'application/xml']) {
      const res = await api.request('POST', '/api/v1/app', {
        raw: 'name=x',
        headers: { 'content-type': type },
      });
      expect(res.status, type).toBe(415);
      expectJson(res);
      expect(res.body.code).toBe('unsupported_media_type');
    }
  });

  it('422 lists every wrong field, with its location', async () => {
    const res = await api.request('POST', '/api/v1/app', {
      body: { name: 42, uid: 'bad uid!', rateLimit: 'fast', metadata: { a: 1 } },
    });
    expect(res.status).toBe(422);
    expect(res.body.code).toBe('validation');
    expect(locs(res).sort()).toEqual(['body.metadata.a', 'body.name', 'body.rateLimit', 'body.uid']);
    for (const item of res.body.detail)
      expect(item).toEqual({ loc: expect.any(Array), msg: expect.any(String), type: expect.any(String) });
    const missing = await api.request('POST', '/api/v1/app', { body: {} });
    expect(missing.body.detail).toEqual([
      { loc: ['body', 'name'], msg: expect.any(String), type: 'value_error.missing' },
    ]);
  });

  it('422 for a request without the body a route needs', async () => {
    const res = await api.request('POST', '/api/v1/app', {});
    expect(res.status).toBe(422);
    expect(locs(res)).toEqual(['body']);
  });

  it('422 for bad path and query values', async () => {
    const badPath = await api.request('GET', `/api/v1/app/${encodeURIComponent('no spaces')}`);
    expect(badPath.status).toBe(422);
    expect(locs(badPath)).toEqual(['path.app_id']);
    const badQuery = await api.request('GET', '/api/v1/app?limit=abc&order=sideways');
    expect(badQuery.status).toBe(422);
    expect(locs(badQuery).sort()).toEqual(['query.limit', 'query.order']);
  });

  it('ignores unknown body and query fields and accepts null where Svix does', async () => {
    const res = await api.request('POST', '/api/v1/app?exclude_apps_with_no_endpoints=true', {
      body: { name: 'extra', uid: null, rateLimit: null, metadata: null, somethingNew: { deep: true } },
    });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ name: 'extra', uid: null, rateLimit: null, metadata: {} });
    expect(res.body).not.toHaveProperty('somethingNew');
  });

  it('404 JSON for unknown routes and unknown ids; 405 for a known path with another method', async () => {
    const route = await api.request('GET', '/api/v1/no-such-thing');
    expect(route.status).toBe(404);
    expectJson(route);
    expect(route.body.code).toBe('not_found');
    const noToken = await api.request('GET', '/nowhere', { token: null });
    expect(noToken.status).toBe(404);
    const id = await api.request('GET', '/api/v1/app/app_01KDWPVNG0Z2T6P6PJXKZK51B0');
    expect(id.status).toBe(404);
    expect(id.body).toEqual({ code: 'not_found', detail: expect.stringContaining('not found') });
    const method = await api.request('DELETE', '/api/v1/app');
    expect(method.status).toBe(405);
    expect(method.headers.get('allow')).toContain('POST');
    expect(method.body.code).toBe('method_not_allowed');
  });

  it('400 JSON for a malformed URL', async () => {
    const res = await api.request('GET', '/api/v1/app/%E0%A4%A');
    expect(res.status).toBe(400);
    expectJson(res);
    expect(res.body.code).toBe('bad_request');
  });

  it('NUL in text is a 422, not a database error', async () => {
    const res = await api.request('POST', '/api/v1/app', { body: { name: 'a\u0000b' } });
    expect(res.status).toBe(422);
    const meta = await api.request('POST', '/api/v1/app', {
      body: { name: 'ok', metadata: { k: 'v\u0000' } },
    });
    expect(meta.status).toBe(422);
  });
});

describe('database unavailable', () => {
  it('answers 503 JSON on any route, and /health/ready says so', async () => {
    // A real PgDatabase pointed at a loopback port nothing listens on: every query is refused.
    // Built with buildServer directly, since startApi prepares a database that must answer.
    const dbPort = await freePort();
    const db = new PgDatabase({
      connectionString: `postgres://postgres@127.0.0.1:${dbPort}/test`,
      poolSize: 1,
    });
    const app = await buildServer({
      db,
      config: testConfig(),
      clock: new ManualClock(Date.UTC(2026, 0, 1, 12)),
    });
    await app.listen({ port: 0, host: '127.0.0.1' });
    const url = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
    const get = async (path: string, headers: Record<string, string> = {}) => {
      const res = await fetch(url + path, { headers });
      const text = await res.text();
      const body = (text ? JSON.parse(text) : null) as { code: string; detail: string } | null;
      return { status: res.status, type: res.headers.get('content-type'), body };
    };
    try {
      const ready = await get('/health/ready');
      expect(ready.status).toBe(503);
      expect(ready.body?.code).toBe('database_unavailable');
      // The configured admin token is checked without the database: the route's own query fails.
      const list = await get('/api/v1/app', { authorization: `Bearer ${TOKEN}` });
      expect(list.status).toBe(503);
      expect(list.type).toMatch(/^application\/json/);
      expect(list.body).toEqual({ code: 'database_unavailable', detail: expect.any(String) });
      // The store's error names the server; the answer to a client does not.
      expect(list.body?.detail).not.toContain(String(dbPort));
      expect((await get('/health')).status).toBe(204);
    } finally {
      await app.close();
      await db.close();
    }
  });
});
