import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Transaction } from '../../src/store/db.ts';
import { deleteEndpoint } from '../../src/store/repos/endpoints.ts';
import { holdOpen, waitingBehind } from '../support/transactions.ts';
import { createApp, createEndpoint, locs, startApi, type TestApi } from './support.ts';

describe('endpoints', () => {
  let api: TestApi;
  let appId: string;
  beforeAll(async () => {
    api = await startApi();
  });
  afterAll(() => api.close());
  beforeEach(async () => {
    appId = await createApp(api);
  });

  const base = () => `/api/v1/app/${appId}/endpoint`;

  it('creates with defaults and returns both Svix v1 and v2 field names', async () => {
    const res = await api.request('POST', base(), {
      body: { url: 'https://example.com/hook', uid: 'main', eventTypes: ['invoice.paid'], throttleRate: 5 },
    });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      id: expect.stringMatching(/^ep_[0-9A-Z]{26}$/),
      uid: 'main',
      url: 'https://example.com/hook',
      description: '',
      disabled: false,
      status: 'enabled',
      disabledReason: null,
      heldByOperator: false,
      filterTypes: ['invoice.paid'],
      eventTypes: ['invoice.paid'],
      channels: null,
      rateLimit: 5,
      throttleRate: 5,
      maxInFlight: api.config.maxInFlight,
      // Set with the admin token: the bound of an application's token while the URL stays.
      operatorMaxInFlight: null,
      operatorRateLimit: 5,
      publicOnly: false,
      retryAfterUntil: null,
      failingSince: null,
      retryPolicy: null,
      version: 1,
      metadata: {},
      createdAt: '2026-01-01T12:00:00.000Z',
      updatedAt: '2026-01-01T12:00:00.000Z',
    });
    const defaults = await createEndpoint(api, appId, { url: 'https://example.com/2' });
    expect(defaults).toMatchObject({ rateLimit: api.config.rateLimit, filterTypes: null, version: 1 });
    expect((await api.request('GET', `${base()}/main`)).body.id).toBe(res.body.id);
  });

  it("takes the application's rate limit as its endpoints' default", async () => {
    const app = await api.request('POST', '/api/v1/app', { body: { name: 'fragile', throttleRate: 5 } });
    const endpoints = `/api/v1/app/${app.body.id}/endpoint`;
    const ep = await api.request('POST', endpoints, { body: { url: 'https://example.com/f' } });
    expect(ep.body).toMatchObject({ rateLimit: 5, throttleRate: 5 });
    const own = await api.request('POST', endpoints, {
      body: { url: 'https://example.com/g', rateLimit: 50 },
    });
    expect(own.body.rateLimit).toBe(50);
    const reset = await api.request('PATCH', `${endpoints}/${own.body.id}`, { body: { rateLimit: null } });
    expect(reset.body.rateLimit).toBe(5);
  });

  it('refuses private and loopback URLs unless allowed, and non-http schemes', async () => {
    const strict = await startApi({
      env: { COURIER_ALLOW_PRIVATE_NETWORKS: '', COURIER_NAT64_PREFIXES: '2a00:1450:64::/96' },
    });
    try {
      const app = await createApp(strict);
      for (const url of [
        'http://127.0.0.1:8080/x',
        'http://10.1.2.3/x',
        'http://169.254.169.254/latest',
        'http://[::1]/x',
        'http://168.63.129.16/machine?comp=goalstate',
        'http://[2a00:1450:64::a9fe:a9fe]/latest', // the metadata address through the named NAT64 prefix
      ]) {
        const res = await strict.request('POST', `/api/v1/app/${app}/endpoint`, { body: { url } });
        expect(res.status, url).toBe(422);
        expect(res.body.detail[0]).toMatchObject({
          loc: ['body', 'url'],
          msg: expect.stringContaining('refused'),
        });
      }
    } finally {
      await strict.close();
    }
    // This server allows 127.0.0.0/8 only.
    expect((await api.request('POST', base(), { body: { url: 'http://127.0.0.1:9/x' } })).status).toBe(201);
    expect((await api.request('POST', base(), { body: { url: 'http://192.168.1.1/x' } })).status).toBe(422);
    // Nor a NAT64 prefix: its addresses are IPv6 addresses to it. (A global address: saved, never sent to.)
    const unnamed = { url: 'http://[2a00:1450:64::a9fe:a9fe]/x' };
    expect((await api.request('POST', base(), { body: unnamed })).status).toBe(201);
    for (const url of ['ftp://example.com/x', 'not a url', 'https://user:pw@example.com/x']) {
      const res = await api.request('POST', base(), { body: { url } });
      expect(locs(res), url).toEqual(['body.url']);
    }
  });

  it('validates the secret, uid, rate limits, policy and headers on create', async () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ secret: 'whsec_tooShort' }, 'body.secret'],
      [{ secret: 'whsk_abc' }, 'body.secret'],
      [{ uid: 'ep_reserved' }, 'body.uid'],
      [{ rateLimit: 0 }, 'body.rateLimit'],
      [{ maxInFlight: 'many' }, 'body.maxInFlight'],
      [{ retryPolicy: { backoff: { baseMs: 5000, capMs: 10 } } }, 'body.retryPolicy'],
      [{ retryPolicy: { giveUp: { windowMs: 2 ** 53 - 1 } } }, 'body.retryPolicy'],
      [{ headers: { 'X-Evil': 'a\r\nInjected: yes' } }, 'body.headers.X-Evil'],
      [{ filterTypes: ['bad type!'] }, 'body.filterTypes.0'],
    ];
    for (const [extra, loc] of cases) {
      const res = await api.request('POST', base(), { body: { url: 'https://example.com/x', ...extra } });
      expect(res.status, JSON.stringify(extra)).toBe(422);
      expect(locs(res), JSON.stringify(extra)).toEqual([loc]);
    }
    const secret = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
    const ep = await createEndpoint(api, appId, { url: 'https://example.com/x', secret: secret.slice(6) });
    expect((await api.request('GET', `${base()}/${ep.id}/secret`)).body).toEqual({ key: secret });
  });

  it('names every field it refuses in one answer, on create, replace and patch; nothing is written', async () => {
    const bad = {
      url: 'http://192.168.1.1/x',
      secret: 'whsec_tooShort',
      headers: { 'X-Evil': 'a\r\nInjected: yes' },
      retryPolicy: { backoff: { baseMs: 5000, capMs: 10 } },
    };
    const made = await api.request('POST', base(), { body: bad });
    expect(made.status, made.text).toBe(422);
    expect(locs(made)).toEqual(['body.secret', 'body.url', 'body.headers.X-Evil', 'body.retryPolicy']);
    expect((await api.request('GET', base())).body.data).toEqual([]);

    const ep = await createEndpoint(api, appId, { url: 'https://example.com/x', description: 'kept' });
    const { headers: _, ...noHeaders } = bad;
    for (const method of ['PUT', 'PATCH']) {
      const res = await api.request(method, `${base()}/${ep.id}`, {
        body: { ...noHeaders, description: 'changed' },
      });
      expect(res.status, res.text).toBe(422);
      expect(locs(res), method).toEqual(['body.secret', 'body.url', 'body.retryPolicy']);
    }
    const kept = (await api.request('GET', `${base()}/${ep.id}`)).body;
    expect([kept.url, kept.description, kept.retryPolicy]).toEqual(['https://example.com/x', 'kept', null]);
  });

  it('lets the signing secret leave only through the secret endpoint', async () => {
    const secret = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
    const created = await api.request('POST', base(), { body: { url: 'https://example.com/s', secret } });
    const id = (created.body as { id: string }).id;
    const hidden = secret.slice(6);
    for (const res of [
      created,
      await api.request('GET', `${base()}/${id}`),
      await api.request('GET', base()),
      await api.request('PATCH', `${base()}/${id}`, { body: { description: 'still hidden' } }),
      await api.request('GET', `${base()}/${id}/headers`),
    ]) {
      expect(JSON.stringify(res.body)).not.toContain(hidden);
    }
    expect((await api.request('GET', `${base()}/${id}/secret`)).body).toEqual({ key: secret });
  });

  it('refuses a uid already used in the application (409), allows it in another one', async () => {
    await createEndpoint(api, appId, { url: 'https://example.com/x', uid: 'same' });
    const dup = await api.request('POST', base(), { body: { url: 'https://example.com/y', uid: 'same' } });
    expect(dup.status).toBe(409);
    const otherApp = await createApp(api);
    expect(
      (
        await api.request('POST', `/api/v1/app/${otherApp}/endpoint`, {
          body: { url: 'https://e.com', uid: 'same' },
        })
      ).status,
    ).toBe(201);
  });

  it('shows the wait its receiver asked for and since when it fails, until a PATCH moves it to another URL', async () => {
    const { id } = await createEndpoint(api, appId, { url: 'https://example.com/slow' });
    await api.db.query(
      `update courier_endpoint_queues set retry_after_until = '2026-01-01T13:00:00Z', failure_streak = 2,
              failing_since = '2025-12-30T08:00:00Z', last_failure_at = '2026-01-01T11:00:00Z'
        where endpoint_id = $1`,
      [id],
    );
    const url = `${base()}/${id}`;
    const held = { retryAfterUntil: '2026-01-01T13:00:00.000Z', failingSince: '2025-12-30T08:00:00.000Z' };
    expect((await api.request('GET', url)).body).toMatchObject(held);
    await api.request('PATCH', url, { body: { description: 'same receiver' } });
    expect((await api.request('GET', url)).body).toMatchObject(held);
    const moved = await api.request('PATCH', url, { body: { url: 'https://example.com/fast' } });
    expect(moved.body).toMatchObject({ retryAfterUntil: null, failingSince: null });
    const { rows } = await api.db.query(
      'select failure_streak from courier_endpoint_queues where endpoint_id = $1',
      [id],
    );
    expect(rows).toEqual([{ failure_streak: 0 }]);
  });

  it('PUT replaces settings (or creates with that uid), PATCH changes only what is given', async () => {
    const ep = await createEndpoint(api, appId, {
      url: 'https://example.com/a',
      description: 'first',
      channels: ['c1'],
      metadata: { k: 'v' },
      headers: { 'X-Keep': '1' },
    });
    const patched = await api.request('PATCH', `${base()}/${ep.id}`, {
      body: { description: 'second', filterTypes: ['a'] },
    });
    expect(patched.status).toBe(200);
    expect(patched.body).toMatchObject({
      url: 'https://example.com/a',
      description: 'second',
      channels: ['c1'],
      eventTypes: ['a'],
    });
    const nulled = await api.request('PATCH', `${base()}/${ep.id}`, {
      body: { channels: null, rateLimit: null },
    });
    expect(nulled.body).toMatchObject({
      channels: null,
      rateLimit: api.config.rateLimit,
      description: 'second',
    });

    const put = await api.request('PUT', `${base()}/${ep.id}`, { body: { url: 'https://example.com/b' } });
    expect(put.status).toBe(200);
    expect(put.body).toMatchObject({
      url: 'https://example.com/b',
      description: '',
      eventTypes: null,
      metadata: {},
    });
    expect((await api.request('GET', `${base()}/${ep.id}/headers`)).body.headers).toEqual({ 'X-Keep': '1' });

    const created = await api.request('PUT', `${base()}/by-put`, { body: { url: 'https://example.com/c' } });
    expect(created.status).toBe(201);
    expect(created.body.uid).toBe('by-put');
    const badUrl = await api.request('PATCH', `${base()}/${ep.id}`, { body: { url: 'http://10.0.0.1/' } });
    expect(locs(badUrl)).toEqual(['body.url']);
  });

  it('PUTs of a new uid at once create one endpoint: the others update it (no 409)', async () => {
    const answers = await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        api.request('PUT', `${base()}/raced`, { body: { url: `https://example.com/${i}` } }),
      ),
    );
    expect(answers.map((a) => a.status).sort()).toEqual([200, 200, 200, 200, 200, 200, 200, 201]);
    expect(new Set(answers.map((a) => a.body.id)).size).toBe(1);
    expect((await api.request('GET', base())).body.data).toHaveLength(1);
  });

  it('PUT repeated on a uid updates the same endpoint; PUT on an id that is not there is a 404', async () => {
    const first = await api.request('PUT', `${base()}/by-put`, { body: { url: 'https://example.com/p' } });
    expect(first.status).toBe(201);
    for (const url of ['https://example.com/q', 'https://example.com/r']) {
      const again = await api.request('PUT', `${base()}/by-put`, { body: { url } });
      expect(again.status).toBe(200);
      expect(again.body).toMatchObject({ id: first.body.id, uid: 'by-put', url });
    }
    expect((await api.request('GET', base())).body.data).toHaveLength(1);
    // Named by its id, a PUT without uid clears it, as Svix's does.
    const byId = await api.request('PUT', `${base()}/${first.body.id}`, {
      body: { url: 'https://example.com/s' },
    });
    expect(byId.body.uid).toBeNull();
    const unknown = await api.request('PUT', `${base()}/ep_01ARZ3NDEKTSV4RRFFQ69G5FAV`, {
      body: { url: 'https://example.com/t' },
    });
    expect(unknown.status).toBe(404);
    expect(unknown.body.code).toBe('not_found');
  });

  /**
   * Holds the endpoint's row locked, as a concurrent edit in progress would, having done `then` under
   * the lock. The returned function commits once all the given requests are blocked behind it.
   */
  async function holdRow(endpointId: string, then?: (tx: Transaction) => Promise<unknown>) {
    const held = await holdOpen(api.db, async (tx) => {
      await tx.query('select 1 from courier_endpoints where id = $1 for update', [endpointId]);
      await then?.(tx);
    });
    return async <T extends unknown[]>(requests: [...T]) => {
      try {
        // Proves each request read the row and waits for its lock, which no fixed sleep could.
        await waitingBehind(api.db, held.pid, requests.length);
      } finally {
        await held.commit();
        // Even on failure: the server cannot close (afterAll) while requests are in flight.
        await Promise.allSettled(requests);
      }
      return Promise.all(requests);
    };
  }

  it('keeps both of two concurrent edits: each is computed from the row as the other left it', async () => {
    const ep = await createEndpoint(api, appId, { url: 'https://example.com/c', description: 'before' });
    const path = `${base()}/${ep.id}`;
    const finish = await holdRow(ep.id);
    const [headers, description, moreHeaders] = await finish([
      api.request('PATCH', `${path}/headers`, { body: { headers: { 'X-Tenant': 't1' } } }),
      api.request('PATCH', path, { body: { description: 'after' } }),
      api.request('PATCH', `${path}/headers`, { body: { headers: { 'X-Region': 'eu' } } }),
    ]);
    expect([headers.status, description.status, moreHeaders.status]).toEqual([204, 200, 204]);
    expect((await api.request('GET', path)).body.description).toBe('after');
    expect((await api.request('GET', `${path}/headers`)).body.headers).toEqual({
      'X-Tenant': 't1',
      'X-Region': 'eu',
    });
  });

  it('answers 404 to an edit of an endpoint deleted while the edit waited', async () => {
    const ep = await createEndpoint(api, appId, { url: 'https://example.com/d', uid: 'racing' });
    const path = `${base()}/${ep.id}`;
    // Deleted (uncommitted) under the lock: the edits still see the endpoint, and wait for the row.
    const finish = await holdRow(ep.id, (tx) => deleteEndpoint(tx, ep.id, api.clock.now()));
    const answers = await finish([
      api.request('PATCH', path, { body: { uid: 'racing', description: 'late' } }),
      api.request('PUT', `${path}/headers`, { body: { headers: { 'X-Late': '1' } } }),
      api.request('POST', `${path}/pause`),
      api.request('POST', `${path}/resume`),
      api.request('DELETE', path),
    ]);
    expect(answers.map((a) => a.status)).toEqual([404, 404, 404, 404, 404]);
    const { rows } = await api.db.query<{ uid: string | null; description: string; status: string }>(
      'select uid, description, status from courier_endpoints where id = $1',
      [ep.id],
    );
    expect(rows[0]).toEqual({ uid: null, description: '', status: 'enabled' });
    const { rows: events } = await api.db.query<{ type: string }>(
      'select type from courier_operational_events where endpoint_id = $1 order by id',
      [ep.id],
    );
    expect(events).toEqual([{ type: 'endpoint.created' }]);
  });

  it('names in endpoint.deleted the endpoint as its deletion found it locked', async () => {
    const ep = await createEndpoint(api, appId, { url: 'https://example.com/r', uid: 'before' });
    // Renamed (uncommitted) under the lock: the DELETE looked up the old uid, and waits for the row.
    const finish = await holdRow(ep.id, (tx) =>
      tx.query(`update courier_endpoints set uid = 'after' where id = $1`, [ep.id]),
    );
    const [deleted] = await finish([api.request('DELETE', `${base()}/before`)]);
    expect(deleted.status).toBe(204);
    const { rows } = await api.db.query<{ data: { endpointUid: string } }>(
      `select data from courier_operational_events where endpoint_id = $1 and type = 'endpoint.deleted'`,
      [ep.id],
    );
    expect(rows.map((r) => r.data.endpointUid)).toEqual(['after']);
  });

  it('deletes (204) and then answers 404', async () => {
    const ep = await createEndpoint(api, appId, { url: 'https://example.com/x', uid: 'gone' });
    const kept = await createEndpoint(api, appId, { url: 'https://example.com/y' });
    // Waiting deliveries, and one a worker holds (leased): only what no worker holds goes.
    for (let i = 0; i < 3; i++) {
      await api.request('POST', `/api/v1/app/${appId}/msg`, { body: { eventType: 'e', payload: { i } } });
    }
    const held = await api.db.query<{ id: string }>(
      `update courier_deliveries set lease_owner = 'w', lease_expires_at = now() + interval '1 minute'
        where id = (select min(id) from courier_deliveries where endpoint_id = $1) returning id`,
      [ep.id],
    );
    const left = async (endpointId: string) =>
      (
        await api.db.query<{ n: number }>(
          'select count(*)::int as n from courier_deliveries where endpoint_id = $1',
          [endpointId],
        )
      ).rows[0]!.n;
    expect([await left(ep.id), await left(kept.id)]).toEqual([3, 3]);
    expect((await api.request('DELETE', `${base()}/gone`)).status).toBe(204);
    // Never to be sent or replayed, they leave the queue table; the other endpoint's stay.
    expect([await left(ep.id), await left(kept.id), held.rows.length]).toEqual([1, 3, 1]);
    expect((await api.request('GET', `${base()}/${ep.id}`)).status).toBe(404);
    expect((await api.request('GET', `${base()}/ep_01KDWPVNG0Z2T6P6PJXKZK51B0`)).status).toBe(404);
    expect(
      (await api.request('GET', `/api/v1/app/app_01KDWPVNG0Z2T6P6PJXKZK51B0/endpoint/${ep.id}`)).status,
    ).toBe(404);
  });

  it('disabled: true holds deliveries; false (or resume) releases them spread out', async () => {
    const ep = await createEndpoint(api, appId, { url: 'https://example.com/x', rateLimit: 2 });
    const off = await api.request('PATCH', `${base()}/${ep.id}`, { body: { disabled: true } });
    expect(off.body).toMatchObject({
      disabled: true,
      status: 'disabled',
      disabledReason: expect.any(String),
    });

    const paused = await createEndpoint(api, appId, { url: 'https://example.com/y', rateLimit: 2 });
    const pause = await api.request('POST', `${base()}/${paused.id}/pause`);
    expect(pause.body).toMatchObject({
      disabled: true,
      status: 'paused',
      disabledReason: 'paused through the API',
    });
    // A paused endpoint keeps what is published for later; a disabled one receives nothing.
    for (let i = 0; i < 6; i++) {
      await api.request('POST', `/api/v1/app/${appId}/msg`, { body: { eventType: 'e', payload: { i } } });
    }
    const held = await api.db.query<{ endpoint_id: string; state: string }>(
      `select endpoint_id, state from courier_deliveries where endpoint_id in ($1, $2)`,
      [ep.id, paused.id],
    );
    expect(held.rows.filter((r) => r.endpoint_id === paused.id).map((r) => r.state)).toEqual(
      Array(6).fill('held'),
    );
    expect(held.rows.filter((r) => r.endpoint_id === ep.id)).toEqual([]);

    const resumed = await api.request('PATCH', `${base()}/${paused.id}`, { body: { disabled: false } });
    expect(resumed.body).toMatchObject({ disabled: false, status: 'enabled', disabledReason: null });
    const { rows } = await api.db.query<{ state: string; next_attempt_at: Date }>(
      'select state, next_attempt_at from courier_deliveries where endpoint_id = $1',
      [paused.id],
    );
    expect(rows.map((r) => r.state)).toEqual(Array(6).fill('pending'));
    // 6 held at 2/s: spread over 3 s from now.
    const offsets = rows.map((r) => r.next_attempt_at.getTime() - api.clock.now());
    expect(Math.min(...offsets)).toBeGreaterThanOrEqual(0);
    expect(Math.max(...offsets)).toBeLessThanOrEqual(3000);
    expect(new Set(offsets).size).toBeGreaterThan(1);

    const resumeOff = await api.request('POST', `${base()}/${ep.id}/resume`);
    expect(resumeOff.body).toMatchObject({ status: 'enabled' });
    // Pause and resume are idempotent.
    expect((await api.request('POST', `${base()}/${ep.id}/resume`)).status).toBe(200);
  });

  it('lists with pagination, newest first as Svix, or oldest first on request', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 5; i++)
      ids.push((await createEndpoint(api, appId, { url: `https://example.com/${i}` })).id);
    const newest = [...ids].reverse();
    const page1 = await api.request('GET', `${base()}?limit=2`);
    expect(page1.body.data.map((e: { id: string }) => e.id)).toEqual(newest.slice(0, 2));
    expect(page1.body.done).toBe(false);
    const page3 = await api.request('GET', `${base()}?limit=2&iterator=${newest[3]}`);
    expect(page3.body).toMatchObject({ done: true, data: [{ id: newest[4] }] });
    const oldest = await api.request('GET', `${base()}?limit=2&order=ascending`);
    expect(oldest.body.data.map((e: { id: string }) => e.id)).toEqual(ids.slice(0, 2));
  });
});
