/**
 * An application's token (Svix's app portal access): made by the admin, it opens that application
 * alone, as its capabilities allow, until it expires, is expired or logs out.
 */
import { ApiException, AppPortalCapability, Svix } from 'svix';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CAPABILITIES } from '../../src/api/app-capabilities.ts';
import { capabilitiesFor, OPEN_ROUTES } from '../../src/api/app-token-access.ts';
import { ensureAdminToken } from '../../src/api/auth.ts';
import { routesOf } from '../../src/api/server.ts';
import { insertAppToken } from '../../src/store/repos/app-tokens.ts';
import { hashToken } from '../../src/store/repos/tokens.ts';
import {
  appPortalToken,
  createApp,
  createEndpoint,
  publishMessage,
  startApi,
  type TestApi,
} from './support.ts';

const HOUR_MS = 3_600_000;

describe('app portal access tokens', () => {
  let api: TestApi;
  let appA: string;
  let appB: string;
  let endpointA: string;

  beforeAll(async () => {
    api = await startApi();
    appA = await createApp(api, { uid: 'customer-a' });
    appB = await createApp(api, { uid: 'customer-b' });
    endpointA = (await createEndpoint(api, appA, { url: 'http://127.0.0.1:9/a' })).id;
    await createEndpoint(api, appB, { url: 'http://127.0.0.1:9/b' });
  });
  afterAll(() => api.close());

  const tokenFor = (app: string, body: Record<string, unknown> = {}) => appPortalToken(api, app, body);
  const as = (token: string) => ({ token });

  it('gives a token the official SDK uses on its application, and nowhere else', async () => {
    const admin = new Svix('test-token-0123456789', { serverUrl: api.url });
    const access = await admin.authentication.appPortalAccess(appA, {});
    expect(access.token).toMatch(/^courierapp_[A-Za-z0-9_-]{43}$/);
    expect(access.url).toBe(`${api.url}/portal#app=${appA}&key=${encodeURIComponent(access.token)}`);

    const customer = new Svix(access.token, { serverUrl: api.url });
    expect((await customer.endpoint.list(appA)).data.map((e) => e.id)).toEqual([endpointA]);
    expect((await customer.application.get('customer-a')).id).toBe(appA);
    const made = await customer.endpoint.create(appA, { url: 'https://hooks.customer-a.example/new' });
    expect((await customer.endpoint.getSecret(appA, made.id)).key).toMatch(/^whsec_/);
    await customer.endpoint.delete(appA, made.id);
    expect((await customer.eventType.list()).data).toEqual(expect.any(Array));

    const refused = async (call: Promise<unknown>) => {
      try {
        await call;
      } catch (error) {
        if (error instanceof ApiException) return error.code;
        throw error;
      }
      return 'answered';
    };
    expect(await refused(customer.endpoint.list(appB))).toBe(403);
    expect(await refused(customer.endpoint.list('customer-b'))).toBe(403);
    expect(await refused(customer.application.list())).toBe(403);
    expect(await refused(customer.application.delete(appA))).toBe(403);
    expect(await refused(customer.message.create(appA, { eventType: 'x', payload: {} }))).toBe(403);
    expect(await refused(customer.authentication.appPortalAccess(appA, {}))).toBe(403);
  });

  it('refuses every route outside its rules, and every route of another application', async () => {
    const token = await tokenFor(appA);
    // Logging out is checked below; anything else under this token's application finds nothing.
    const routes = routesOf(api.app).filter(
      (r) => !r.public && r.method !== 'HEAD' && r.url !== '/api/v1/auth/logout',
    );
    expect(routes.length).toBeGreaterThan(60);
    // A rule naming no registered route (a typo) would close what it meant to open.
    const registered = routes.map((r) => `${r.method} ${r.url}`);
    for (const open of OPEN_ROUTES.filter((r) => r !== 'POST /api/v1/auth/logout'))
      expect(registered).toContain(open);
    for (const route of routes) {
      const body = ['POST', 'PUT', 'PATCH'].includes(route.method) ? { body: {} } : {};
      const path = (app: string) =>
        route.url.replace(':app_id', app).replace(/:(\w+)/g, (_m, name: string) => `some_${name}`);
      const name = `${route.method} ${route.url}`;
      const listed = capabilitiesFor(route.method, route.url) !== undefined;
      if (!route.url.includes(':app_id')) {
        const res = await api.request(route.method, path(appA), { ...as(token), ...body });
        if (listed) expect(res.status, name).not.toBe(403);
        else expect(res.body, name).toMatchObject({ code: 'forbidden' });
        continue;
      }
      for (const other of [appB, 'customer-b', 'no-such-app']) {
        const res = await api.request(route.method, path(other), { ...as(token), ...body });
        expect(res.status, `${name} on ${other}`).toBe(403);
        expect(res.body.code).toBe('forbidden');
      }
      const own = await api.request(route.method, path(appA), { ...as(token), ...body });
      if (listed) expect(own.status, name).not.toBe(403);
      else expect(own.status, name).toBe(403);
    }
  });

  it("finds nothing of another application's under its own: endpoints, messages, attempts", async () => {
    const token = await tokenFor(appA);
    const endpointB = (await api.request('GET', `/api/v1/app/${appB}/endpoint`)).body.data[0].id;
    const messageB = await publishMessage(api, appB);
    for (const path of [
      `/api/v1/app/${appA}/endpoint/${endpointB}`,
      `/api/v1/app/${appA}/endpoint/${endpointB}/stats`,
      `/api/v1/app/${appA}/attempt/endpoint/${endpointB}`,
      `/api/v1/app/${appA}/msg/${messageB}`,
      `/api/v1/app/${appA}/attempt/msg/${messageB}`,
      `/api/v1/app/${appA}/msg/${messageB}/endpoint`,
    ]) {
      const res = await api.request('GET', path, { token });
      expect(res.status, path).toBe(404);
    }
    // HEAD is judged as GET.
    expect((await api.request('HEAD', `/api/v1/app/${appB}/endpoint`, { token })).status).toBe(403);
    expect((await api.request('HEAD', `/api/v1/app/${appA}/endpoint`, { token })).status).toBe(200);
  });

  it('keeps to its capabilities', async () => {
    const base = `/api/v1/app/${appA}/endpoint/${endpointA}`;
    const calls: [string, string, unknown?][] = [
      ['GET', `${base}/secret`],
      ['POST', `${base}/secret/rotate`, {}],
      ['GET', `${base}/headers`],
      ['PATCH', base, { description: 'changed' }],
      ['POST', `${base}/send-example`, { eventType: 'svix.ping' }],
    ];
    const statuses = async (capabilities: string[] | null, readOnly?: boolean) => {
      const token = await tokenFor(appA, { capabilities, ...(readOnly === undefined ? {} : { readOnly }) });
      const out: number[] = [];
      for (const [method, path, body] of calls) {
        out.push((await api.request(method, path, { token, ...(body ? { body } : {}) })).status);
      }
      return out;
    };
    expect(await statuses(['ViewBase'])).toEqual([403, 403, 403, 403, 403]);
    expect(await statuses(null, true)).toEqual([403, 403, 403, 403, 403]);
    expect(await statuses(['ViewBase', 'ViewEndpointSecret'])).toEqual([200, 403, 403, 403, 403]);
    expect(await statuses(['ViewBase', 'ManageEndpointSecret'])).toEqual([200, 204, 403, 403, 403]);
    expect(await statuses(['ViewBase', 'CreateAttempts'])).toEqual([403, 403, 403, 403, 200]);
    expect(await statuses(['ViewBase', 'ManageEndpoint'])).toEqual([200, 204, 200, 200, 403]);
    expect(await statuses(null)).toEqual([200, 204, 200, 200, 200]);
    const viewer = await tokenFor(appA, { capabilities: [AppPortalCapability.ViewBase] });
    const denied = await api.request('GET', `${base}/secret`, { token: viewer });
    expect(denied.body).toEqual({
      code: 'forbidden',
      detail:
        'This token lacks the capability this route needs: ViewEndpointSecret or ManageEndpointSecret or ManageEndpoint',
    });
  });

  it('says what it is: its application, capabilities and end, not its flags; the admin token every capability', async () => {
    const session = async (token?: string) =>
      api.request('GET', '/api/v1/auth/session', token ? { token } : {});
    const viewer = await tokenFor(appA, {
      capabilities: ['ViewBase', 'CreateAttempts'],
      featureFlags: ['beta'],
      expiry: 7200,
    });
    const made = api.clock.now();
    const own = await session(viewer);
    expect(own.status).toBe(200);
    // Not its feature flags: a flag may name a plan or another customer.
    expect(own.body).toEqual({
      kind: 'application',
      appId: appA,
      capabilities: ['ViewBase', 'CreateAttempts'],
      expiresAt: new Date(made + 7200_000).toISOString(),
    });
    expect((await session(await tokenFor(appA, { readOnly: true }))).body.capabilities).toEqual(['ViewBase']);
    expect((await session(await tokenFor(appA))).body.capabilities).toEqual([...CAPABILITIES]);
    const admin = (await session()).body;
    expect(admin).toEqual({ kind: 'admin', appId: null, capabilities: [...CAPABILITIES], expiresAt: null });
    // Every capability the official SDK knows.
    expect([...admin.capabilities].sort()).toEqual(Object.values(AppPortalCapability).sort());
    api.clock.advance(7200_000);
    expect((await session(viewer)).status).toBe(401);
  });

  it('refuses bad requests with the field named', async () => {
    const bad = async (body: Record<string, unknown>, app = appA) =>
      api.request('POST', `/api/v1/auth/app-portal-access/${app}`, { body });
    const withoutBase = await bad({ capabilities: ['ManageEndpoint'] });
    expect(withoutBase.status).toBe(422);
    expect(withoutBase.body.detail[0]).toMatchObject({
      loc: ['body', 'capabilities'],
      msg: 'must include ViewBase',
    });
    expect((await bad({ readOnly: true, capabilities: ['ViewBase', 'ManageEndpoint'] })).status).toBe(422);
    expect((await bad({ capabilities: ['ViewBase', 'Everything'] })).status).toBe(422);
    expect((await bad({ expiry: 60 })).status).toBe(422);
    expect((await bad({ expiry: 8 * 24 * 3600 })).status).toBe(422);
    expect((await bad({}, 'missing-app')).status).toBe(404);
    const reserved = await bad({ application: { name: 'x' } }, 'courier-operator');
    expect(reserved.status).toBe(422);
    expect(reserved.body.detail[0].loc).toEqual(['body', 'application', 'uid']);
    const viaMessage = await api.request('POST', '/api/v1/app/courier-operator/msg', {
      body: { eventType: 'x', payload: {}, application: { name: 'x' } },
    });
    expect(viaMessage.status).toBe(422);
    expect((await api.request('GET', '/api/v1/app/courier-operator')).status).toBe(404);
  });

  it('makes a missing application under the uid in the path', async () => {
    const token = await tokenFor('customer-c', { application: { name: 'Customer C' } });
    const app = await api.request('GET', '/api/v1/app/customer-c', { token });
    expect(app.status).toBe(200);
    expect(app.body).toMatchObject({ uid: 'customer-c', name: 'Customer C' });
  });

  it('expires by the clock, by expire-all (all, or sessions), by logout and with its application', async () => {
    const works = async (token: string) =>
      (await api.request('GET', `/api/v1/app/${appA}/endpoint`, { token })).status;
    const short = await tokenFor(appA, { expiry: 3600 });
    const week = await tokenFor(appA);
    api.clock.advance(HOUR_MS);
    expect([await works(short), await works(week)]).toEqual([401, 200]);

    const one = await tokenFor(appA, { sessionId: 's1' });
    const two = await tokenFor(appA, { sessionId: 's2' });
    const expireAll = (body: Record<string, unknown>) =>
      api.request('POST', `/api/v1/auth/app/customer-a/expire-all`, { body });
    expect((await expireAll({ sessionIds: ['s1'] })).status).toBe(204);
    expect([await works(one), await works(two), await works(week)]).toEqual([401, 200, 200]);
    expect((await expireAll({ expiry: 60 })).status).toBe(204);
    // An expired token is not brought back by a later end.
    expect([await works(one), await works(two), await works(week)]).toEqual([401, 200, 200]);
    api.clock.advance(60_000);
    expect([await works(two), await works(week)]).toEqual([401, 401]);

    const leaving = await tokenFor(appA);
    expect((await api.request('POST', '/api/v1/auth/logout', { token: leaving, body: {} })).status).toBe(204);
    expect(await works(leaving)).toBe(401);
    const admin = await api.request('POST', '/api/v1/auth/logout', { body: {} });
    expect(admin.status).toBe(403);

    const gone = await createApp(api);
    const orphan = await tokenFor(gone);
    expect((await api.request('DELETE', `/api/v1/app/${gone}`)).status).toBe(204);
    expect((await api.request('GET', '/api/v1/event-type', { token: orphan })).status).toBe(401);
    const { rows: left } = await api.db.query<{ n: string }>(
      'select count(*) as n from courier_app_tokens where app_id = $1',
      [gone],
    );
    expect(Number(left[0]!.n)).toBe(0);
    // One stored as its application was being deleted opens nothing either.
    const late = 'courierapp_made-as-its-application-was-deleted';
    const now = api.clock.now();
    await insertAppToken(api.db, {
      appId: gone,
      hash: hashToken(late),
      capabilities: ['ViewBase'],
      featureFlags: [],
      sessionId: null,
      now,
      expiresAt: now + HOUR_MS,
    });
    expect((await api.request('GET', '/api/v1/event-type', { token: late })).status).toBe(401);
  });

  it('is not kept for an idempotency-key repeat: the answer holds a credential', async () => {
    const headers = { 'idempotency-key': 'portal-once' };
    const first = await api.request('POST', `/api/v1/auth/app-portal-access/${appA}`, { body: {}, headers });
    const again = await api.request('POST', `/api/v1/auth/app-portal-access/${appA}`, { body: {}, headers });
    expect(first.body.token).not.toBe(again.body.token);
    const { rows } = await api.db.query<{ n: string }>(
      'select count(*) as n from courier_idempotency_keys where body like $1',
      [`%${first.body.token}%`],
    );
    expect(Number(rows[0]!.n)).toBe(0);
    const { rows: stored } = await api.db.query<{ n: string }>(
      "select count(*) as n from courier_app_tokens where token_hash = sha256(convert_to($1, 'UTF8'))",
      [first.body.token],
    );
    expect(Number(stored[0]!.n)).toBe(1);
  });

  it("reads back the task its application's replay answered with, and no other application's", async () => {
    const token = await tokenFor(appA, { capabilities: ['ViewBase', 'CreateAttempts'] });
    const customer = new Svix(token, { serverUrl: api.url });
    const since = new Date(api.clock.now() - HOUR_MS);
    const task = await customer.endpoint.recover(appA, endpointA, { since });
    expect((await customer.backgroundTask.get(task.id)).data).toMatchObject({ appId: appA });
    const endpointB = (await api.request('GET', `/api/v1/app/${appB}/endpoint`)).body.data[0].id;
    const other = await api.request('POST', `/api/v1/app/${appB}/endpoint/${endpointB}/recover`, {
      body: { since: since.toISOString() },
    });
    expect(other.status).toBe(202);
    expect((await api.request('GET', `/api/v1/background-task/${other.body.id}`)).status).toBe(200);
    const hidden = await api.request('GET', `/api/v1/background-task/${other.body.id}`, { token });
    expect(hidden.status).toBe(404);
    const listed = await api.request('GET', '/api/v1/background-task', { token });
    expect(listed.status).toBe(200);
    expect(listed.body.data.map((t: { id: string }) => t.id)).toEqual([task.id]);
    const all = await api.request('GET', '/api/v1/background-task');
    expect(all.body.data.map((t: { id: string }) => t.id)).toEqual([other.body.id, task.id]);
  });

  // After the test that the application field cannot make it: this one makes it.
  it("gives no token for the operator application, whose messages are every application's events", async () => {
    const made = await api.request('POST', '/api/v1/operational-webhook/endpoint', {
      body: { url: 'http://127.0.0.1:9/ops' },
    });
    expect(made.status).toBe(201);
    const operator = (await api.request('GET', '/api/v1/app/courier-operator')).body.id;
    for (const app of ['courier-operator', operator]) {
      const res = await api.request('POST', `/api/v1/auth/app-portal-access/${app}`, { body: {} });
      expect(res.status, app).toBe(422);
      expect(res.body.detail[0].loc).toEqual(['path', 'app_id']);
    }
  });
});

describe('app portal access without COURIER_ADMIN_TOKEN', () => {
  it('works beside the generated admin token', async () => {
    const api = await startApi({ env: { COURIER_ADMIN_TOKEN: '' } });
    try {
      const { created: admin } = await ensureAdminToken(api.db, api.config, api.clock);
      expect(admin).toMatch(/^courier_/);
      const app = await createAppWith(api, admin!);
      const res = await api.request('POST', `/api/v1/auth/app-portal-access/${app}`, {
        token: admin,
        body: {},
      });
      expect(res.status).toBe(200);
      expect((await api.request('GET', `/api/v1/app/${app}`, { token: res.body.token })).status).toBe(200);
      expect((await api.request('GET', '/api/v1/app', { token: res.body.token })).status).toBe(403);
      expect((await api.request('GET', '/api/v1/app', { token: admin })).status).toBe(200);
      expect((await api.request('GET', '/api/v1/app', { token: 'courierapp_unknown' })).status).toBe(401);
    } finally {
      await api.close();
    }
  });

  async function createAppWith(api: TestApi, token: string): Promise<string> {
    const res = await api.request('POST', '/api/v1/app', { token, body: { name: 'x' } });
    expect(res.status).toBe(201);
    return res.body.id;
  }
});

describe('app portal access links', () => {
  it('fill COURIER_APP_PORTAL_URL in', async () => {
    const api = await startApi({
      env: { COURIER_APP_PORTAL_URL: 'https://dashboard.example.com/webhooks/{app_id}#token={token}' },
    });
    try {
      const app = await createApp(api);
      const res = await api.request('POST', `/api/v1/auth/dashboard-access/${app}`);
      expect(res.status).toBe(200);
      expect(res.body.url).toBe(`https://dashboard.example.com/webhooks/${app}#token=${res.body.token}`);
      expect((await api.request('GET', `/api/v1/app/${app}`, { token: res.body.token })).status).toBe(200);
    } finally {
      await api.close();
    }
  });

  it('name the public address behind a proxy COURIER_TRUST_PROXY names, and only there', async () => {
    // What a TLS-terminating proxy on this host forwards; a client elsewhere could send the same.
    const headers = { 'x-forwarded-proto': 'https', 'x-forwarded-host': 'hooks.example.com' };
    for (const [env, base] of [
      [{ COURIER_TRUST_PROXY: 'loopback' }, 'https://hooks.example.com'],
      [{ COURIER_TRUST_PROXY: '127.0.0.1/32,10.0.0.0/8' }, 'https://hooks.example.com'],
      [{ COURIER_TRUST_PROXY: '10.0.0.0/8' }, null],
      [{}, null],
    ] as const) {
      const api = await startApi({ env });
      try {
        const app = await createApp(api);
        const res = await api.request('POST', `/api/v1/auth/app-portal-access/${app}`, { body: {}, headers });
        expect(res.status, res.text).toBe(200);
        expect(res.body.url, JSON.stringify(env)).toBe(
          `${base ?? api.url}/portal#app=${app}&key=${encodeURIComponent(res.body.token)}`,
        );
        // A scheme that is not https, however forwarded, is http.
        const odd = await api.request('POST', `/api/v1/auth/app-portal-access/${app}`, {
          body: {},
          headers: { ...headers, 'x-forwarded-proto': 'javascript' },
        });
        expect(odd.body.url).toMatch(/^http:\/\//);
      } finally {
        await api.close();
      }
    }
  });

  it('serve the portal page with no token, framed by no one unless COURIER_APP_PORTAL_FRAME_ANCESTORS says', async () => {
    for (const [env, ancestors] of [
      [{}, "'none'"],
      [
        { COURIER_APP_PORTAL_FRAME_ANCESTORS: "https://dashboard.example.com  'self'" },
        "https://dashboard.example.com 'self'",
      ],
    ] as const) {
      const api = await startApi({ env });
      try {
        const res = await api.request('GET', '/portal', { token: null });
        expect(res.status).toBe(200);
        expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8');
        const csp = res.headers.get('content-security-policy') ?? '';
        expect(csp.split('; ')).toContain(`frame-ancestors ${ancestors}`);
        expect(csp.split('; ')).toContain("connect-src 'self'");
        expect(csp).not.toContain('unsafe-inline');
        expect(res.headers.get('referrer-policy')).toBe('no-referrer');
        expect(res.headers.get('cache-control')).toBe('no-store');
        expect(res.text).toContain('<main id="main">');
      } finally {
        await api.close();
      }
    }
  });
});
