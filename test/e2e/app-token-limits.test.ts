/**
 * An application's token (a customer's) sets an endpoint's delivery settings within the
 * operator's limits: maxInFlight up to COURIER_MAX_IN_FLIGHT, rateLimit up to the endpoint's
 * default, or while its URL stays up to what the admin token set for it, higher or lower (else the
 * endpoint's own higher values); retryPolicy only as it is; what it leaves out is kept, a PUT's too (the official SDK's endpoint.update knows nothing of
 * Courier's extensions). The admin token sets them freely.
 */
import { Svix } from 'svix';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { appPortalToken, createApp, createEndpoint, locs, startApi, type TestApi } from './support.ts';

const URL = 'https://hooks.customer.example/in';
const POLICY = { backoff: { baseMs: 30_000, capMs: 600_000 }, giveUp: { maxAttempts: 5 } };

describe("an application's token and an endpoint's delivery settings", () => {
  let api: TestApi;
  let appId: string;
  let token: string;

  beforeAll(async () => {
    api = await startApi({ env: { COURIER_MAX_IN_FLIGHT: '8', COURIER_RATE_LIMIT: '100' } });
  });
  afterAll(() => api.close());
  beforeEach(async () => {
    appId = await createApp(api);
    token = await appPortalToken(api, appId);
  });

  const asToken = (method: string, path: string, body: Record<string, unknown>) =>
    api.request(method, `/api/v1/app/${appId}/endpoint${path}`, { token, body });
  const settingsOf = async (id: string) => {
    const { body } = await api.request('GET', `/api/v1/app/${appId}/endpoint/${id}`);
    return { maxInFlight: body.maxInFlight, rateLimit: body.rateLimit, retryPolicy: body.retryPolicy };
  };
  const refusal = async (answer: Awaited<ReturnType<typeof asToken>>, loc: string) => {
    expect(answer.status, answer.text).toBe(422);
    expect(locs(answer)).toEqual([loc]);
    return answer.body.detail[0].msg as string;
  };

  it('refuses more than the defaults, and any retry policy, when the token creates; nothing is made', async () => {
    expect(await refusal(await asToken('POST', '', { url: URL, maxInFlight: 9 }), 'body.maxInFlight')).toBe(
      "an application's token sets maxInFlight up to 8 (COURIER_MAX_IN_FLIGHT); more takes the admin token",
    );
    expect(await refusal(await asToken('POST', '', { url: URL, rateLimit: 101 }), 'body.rateLimit')).toBe(
      "an application's token sets rateLimit up to 100 (the endpoint's default: its application's rateLimit, else COURIER_RATE_LIMIT); more takes the admin token",
    );
    await refusal(await asToken('POST', '', { url: URL, throttleRate: 101 }), 'body.throttleRate');
    await refusal(await asToken('PUT', '/by-uid', { url: URL, maxInFlight: 9 }), 'body.maxInFlight');
    await refusal(await asToken('PUT', '/by-uid', { url: URL, rateLimit: 101 }), 'body.rateLimit');
    expect(
      await refusal(await asToken('PUT', '/by-uid', { url: URL, retryPolicy: POLICY }), 'body.retryPolicy'),
    ).toBe("only the admin token sets retryPolicy; an application's token may send it unchanged");
    // A policy that would not even build gets the same answer: it is not the token's to set.
    const hot = { backoff: { baseMs: 0 } };
    expect(await refusal(await asToken('POST', '', { url: URL, retryPolicy: hot }), 'body.retryPolicy')).toBe(
      "only the admin token sets retryPolicy; an application's token may send it unchanged",
    );
    expect((await api.request('GET', `/api/v1/app/${appId}/endpoint`)).body.data).toEqual([]);

    const made = await asToken('POST', '', { url: URL, maxInFlight: 8, rateLimit: 100, retryPolicy: null });
    expect(made.status, made.text).toBe(201);
    expect(await settingsOf(made.body.id)).toEqual({ maxInFlight: 8, rateLimit: 100, retryPolicy: null });
    const lower = await asToken('POST', '', { url: URL, maxInFlight: 2, throttleRate: 5 });
    expect(lower.status, lower.text).toBe(201);
    expect(await settingsOf(lower.body.id)).toEqual({ maxInFlight: 2, rateLimit: 5, retryPolicy: null });
  });

  it('names every setting it refuses the token in one answer, beside the other refused fields', async () => {
    const res = await asToken('POST', '', {
      url: URL,
      publicOnly: false,
      maxInFlight: 9,
      rateLimit: 101,
      retryPolicy: POLICY,
    });
    expect(res.status, res.text).toBe(422);
    expect(locs(res)).toEqual(['body.publicOnly', 'body.maxInFlight', 'body.rateLimit', 'body.retryPolicy']);
    expect((await api.request('GET', `/api/v1/app/${appId}/endpoint`)).body.data).toEqual([]);
  });

  it("bounds the rate limit by the application's own default, below or above COURIER_RATE_LIMIT", async () => {
    for (const [rate, over] of [
      [20, "up to 20 (the endpoint's default"],
      [500, "up to 500 (the endpoint's default"],
    ] as const) {
      const other = await createApp(api, { rateLimit: rate });
      const res = await api.request('POST', `/api/v1/auth/app-portal-access/${other}`, { body: {} });
      const post = (body: Record<string, unknown>) =>
        api.request('POST', `/api/v1/app/${other}/endpoint`, {
          token: res.body.token,
          body: { url: URL, ...body },
        });
      expect(await refusal(await post({ rateLimit: rate + 1 }), 'body.rateLimit')).toContain(over);
      const made = await post({ rateLimit: rate });
      expect(made.status, made.text).toBe(201);
      expect(made.body.rateLimit).toBe(rate);
    }
  });

  it("keeps the operator's settings through the token's writes, the SDK's update included, and lets it lower them", async () => {
    const { id } = await createEndpoint(api, appId, {
      url: URL,
      maxInFlight: 50,
      rateLimit: 5000,
      retryPolicy: POLICY,
    });
    const operators = { maxInFlight: 50, rateLimit: 5000, retryPolicy: POLICY };

    const customer = new Svix(token, { serverUrl: api.url });
    await customer.endpoint.update(appId, id, { url: URL, description: 'by the SDK' });
    expect(await settingsOf(id)).toEqual(operators);
    expect((await asToken('PATCH', `/${id}`, { description: 'again' })).status).toBe(200);
    expect(await settingsOf(id)).toEqual(operators);

    // The endpoint read back and sent whole is accepted, its policy's keys in either order
    // (whichever order the store keeps, one of the two differs from it).
    const { body: read } = await api.request('GET', `/api/v1/app/${appId}/endpoint/${id}`, { token });
    const reordered = { giveUp: POLICY.giveUp, backoff: { capMs: 600_000, baseMs: 30_000 } };
    const whole = await asToken('PUT', `/${id}`, {
      url: read.url,
      description: 'whole',
      maxInFlight: read.maxInFlight,
      throttleRate: read.throttleRate,
      retryPolicy: reordered,
    });
    expect(whole.status, whole.text).toBe(200);
    expect((await asToken('PATCH', `/${id}`, { retryPolicy: POLICY })).status).toBe(200);
    expect(await settingsOf(id)).toEqual(operators);

    expect(await refusal(await asToken('PATCH', `/${id}`, { maxInFlight: 51 }), 'body.maxInFlight')).toBe(
      "an application's token sets maxInFlight up to 50 (the operator's, for this URL); more takes the admin token",
    );
    await refusal(await asToken('PATCH', `/${id}`, { rateLimit: 5001 }), 'body.rateLimit');
    await refusal(await asToken('PATCH', `/${id}`, { retryPolicy: null }), 'body.retryPolicy');
    const harder = { ...POLICY, giveUp: { maxAttempts: 1_000_000 } };
    const refused = await asToken('PUT', `/${id}`, {
      url: `${URL}/elsewhere`,
      description: 'refused',
      retryPolicy: harder,
    });
    await refusal(refused, 'body.retryPolicy');
    const after = (await api.request('GET', `/api/v1/app/${appId}/endpoint/${id}`)).body;
    expect([after.url, after.description]).toEqual([URL, 'whole']);
    expect(await settingsOf(id)).toEqual(operators);

    // Lowered by the token, above the defaults or below them, and raised again up to the
    // operator's, not past them.
    expect((await asToken('PATCH', `/${id}`, { maxInFlight: 20, rateLimit: 2000 })).status).toBe(200);
    expect(await settingsOf(id)).toEqual({ ...operators, maxInFlight: 20, rateLimit: 2000 });
    await refusal(await asToken('PATCH', `/${id}`, { maxInFlight: 51 }), 'body.maxInFlight');
    expect((await asToken('PATCH', `/${id}`, { maxInFlight: 3, rateLimit: 10 })).status).toBe(200);
    expect(await settingsOf(id)).toEqual({ ...operators, maxInFlight: 3, rateLimit: 10 });
    expect((await asToken('PATCH', `/${id}`, { maxInFlight: null, rateLimit: null })).status).toBe(200);
    expect(await settingsOf(id)).toEqual({ ...operators, maxInFlight: 8, rateLimit: 100 });
    expect((await asToken('PATCH', `/${id}`, { maxInFlight: 50, rateLimit: 5000 })).status).toBe(200);
    expect(await settingsOf(id)).toEqual(operators);
    await refusal(await asToken('PATCH', `/${id}`, { rateLimit: 5001 }), 'body.rateLimit');

    // The admin token sets more with a PATCH, and its PUT still replaces: what it leaves out goes
    // back to the defaults.
    const raised = await api.request('PATCH', `/api/v1/app/${appId}/endpoint/${id}`, {
      body: { maxInFlight: 500, rateLimit: 50_000 },
    });
    expect(raised.status, raised.text).toBe(200);
    expect(await settingsOf(id)).toEqual({ ...operators, maxInFlight: 500, rateLimit: 50_000 });
    const admin = await api.request('PUT', `/api/v1/app/${appId}/endpoint/${id}`, { body: { url: URL } });
    expect(admin.status, admin.text).toBe(200);
    expect(await settingsOf(id)).toEqual({ maxInFlight: 8, rateLimit: 100, retryPolicy: null });
    // So are the operator's bounds: the token is held to the defaults again.
    expect(await refusal(await asToken('PATCH', `/${id}`, { maxInFlight: 9 }), 'body.maxInFlight')).toBe(
      "an application's token sets maxInFlight up to 8 (COURIER_MAX_IN_FLIGHT); more takes the admin token",
    );
  });

  it('holds the token to what the operator lowered while the URL stays, and no longer once the token moves it', async () => {
    const { id } = await createEndpoint(api, appId, { url: URL, maxInFlight: 2, rateLimit: 5 });
    const slowed = { maxInFlight: 2, rateLimit: 5, retryPolicy: null };
    expect(await refusal(await asToken('PATCH', `/${id}`, { rateLimit: 6 }), 'body.rateLimit')).toBe(
      "an application's token sets rateLimit up to 5 (the operator's, for this URL); more takes the admin token",
    );
    await refusal(await asToken('PATCH', `/${id}`, { maxInFlight: 3 }), 'body.maxInFlight');
    // Back to the default is more than the operator's too.
    await refusal(await asToken('PATCH', `/${id}`, { throttleRate: null }), 'body.throttleRate');
    const res = await asToken('PUT', `/${id}`, { url: URL, maxInFlight: 8, rateLimit: 100 });
    expect(locs(res)).toEqual(['body.maxInFlight', 'body.rateLimit']);
    expect(await settingsOf(id)).toEqual(slowed);

    // Kept through the SDK's update and the form read back; lowered, and raised again as far.
    const customer = new Svix(token, { serverUrl: api.url });
    await customer.endpoint.update(appId, id, { url: URL, description: 'by the SDK' });
    const { body: read } = await api.request('GET', `/api/v1/app/${appId}/endpoint/${id}`, { token });
    const whole = await asToken('PUT', `/${id}`, {
      url: read.url,
      maxInFlight: read.maxInFlight,
      throttleRate: read.throttleRate,
    });
    expect(whole.status, whole.text).toBe(200);
    expect(await settingsOf(id)).toEqual(slowed);
    expect((await asToken('PATCH', `/${id}`, { maxInFlight: 1, rateLimit: 1 })).status).toBe(200);
    expect((await asToken('PATCH', `/${id}`, { maxInFlight: 2, rateLimit: 5 })).status).toBe(200);
    await refusal(await asToken('PATCH', `/${id}`, { rateLimit: 6 }), 'body.rateLimit');

    // The admin token's write without them keeps them; sending one back to the default ends it.
    const admin = (body: Record<string, unknown>) =>
      api.request('PATCH', `/api/v1/app/${appId}/endpoint/${id}`, { body });
    expect((await admin({ description: 'by the operator' })).status).toBe(200);
    await refusal(await asToken('PATCH', `/${id}`, { rateLimit: 6 }), 'body.rateLimit');
    expect((await admin({ rateLimit: null })).status).toBe(200);
    expect((await asToken('PATCH', `/${id}`, { rateLimit: 50 })).status).toBe(200);
    expect((await asToken('PATCH', `/${id}`, { rateLimit: 100 })).status).toBe(200);
    await refusal(await asToken('PATCH', `/${id}`, { maxInFlight: 3 }), 'body.maxInFlight');

    // A new URL is a receiver the operator did not slow: what is lower travels, the token's to raise.
    expect((await asToken('PATCH', `/${id}`, { url: `${URL}/moved` })).status).toBe(200);
    expect(await settingsOf(id)).toEqual({ maxInFlight: 2, rateLimit: 100, retryPolicy: null });
    expect((await asToken('PATCH', `/${id}`, { maxInFlight: 8 })).status).toBe(200);
    expect(await settingsOf(id)).toEqual({ maxInFlight: 8, rateLimit: 100, retryPolicy: null });
  });

  it("records the operator's bounds from the writes that set them, for the URL they were set for", async () => {
    const admin = (id: string, method: string, body: Record<string, unknown>) =>
      api.request(method, `/api/v1/app/${appId}/endpoint/${id}`, { body });
    const bounds = async (id: string) => {
      const { body } = await api.request('GET', `/api/v1/app/${appId}/endpoint/${id}`, { token });
      return [body.operatorMaxInFlight, body.operatorRateLimit];
    };
    const { id } = await createEndpoint(api, appId, { url: URL });
    expect(await bounds(id)).toEqual([null, null]);
    // By its other name; shown to the token as to the operator.
    expect((await admin(id, 'PATCH', { throttleRate: 5 })).status).toBe(200);
    expect(await bounds(id)).toEqual([null, 5]);
    await refusal(await asToken('PATCH', `/${id}`, { rateLimit: 6 }), 'body.rateLimit');

    // The operator's form read back, after the token lowered a setting, records nothing new.
    expect((await asToken('PATCH', `/${id}`, { maxInFlight: 1, rateLimit: 2 })).status).toBe(200);
    const { body: read } = await api.request('GET', `/api/v1/app/${appId}/endpoint/${id}`);
    const back = await admin(id, 'PUT', {
      url: read.url,
      maxInFlight: read.maxInFlight,
      rateLimit: read.rateLimit,
    });
    expect(back.status, back.text).toBe(200);
    expect(await bounds(id)).toEqual([null, 5]);
    expect((await asToken('PATCH', `/${id}`, { maxInFlight: 8, rateLimit: 5 })).status).toBe(200);

    // The custom headers' own route keeps them; so does the operator's new URL, for it.
    const headers = await api.request('PUT', `/api/v1/app/${appId}/endpoint/${id}/headers`, {
      body: { headers: { 'X-Tenant': 'acme' } },
    });
    expect(headers.status, headers.text).toBe(204);
    expect((await admin(id, 'PATCH', { url: `${URL}/new` })).status).toBe(200);
    expect(await bounds(id)).toEqual([null, 5]);
    await refusal(await asToken('PATCH', `/${id}`, { rateLimit: 6 }), 'body.rateLimit');
    // The operator's PUT that leaves them out clears them.
    expect((await admin(id, 'PUT', { url: `${URL}/new` })).status).toBe(200);
    expect(await bounds(id)).toEqual([null, null]);
    expect((await asToken('PATCH', `/${id}`, { rateLimit: 100 })).status).toBe(200);

    // The operator's PATCH asks for what it sends, the value the endpoint has included; with a
    // new URL, its PUT sets what it sends for that URL.
    expect((await asToken('PATCH', `/${id}`, { rateLimit: 50 })).status).toBe(200);
    expect((await admin(id, 'PATCH', { rateLimit: 50 })).status).toBe(200);
    expect(await bounds(id)).toEqual([null, 50]);
    expect((await admin(id, 'PUT', { url: URL, maxInFlight: 4, rateLimit: 50 })).status).toBe(200);
    expect(await bounds(id)).toEqual([4, 50]);
    // The token's move ends them, and moving back does not bring them back.
    expect((await asToken('PATCH', `/${id}`, { url: `${URL}/away` })).status).toBe(200);
    expect((await asToken('PATCH', `/${id}`, { url: URL })).status).toBe(200);
    expect(await bounds(id)).toEqual([null, null]);
    expect((await asToken('PATCH', `/${id}`, { maxInFlight: 8, rateLimit: 100 })).status).toBe(200);

    // A new URL written by the previous release, which knows nothing of them, ends them too.
    expect((await admin(id, 'PATCH', { maxInFlight: 3 })).status).toBe(200);
    expect(await bounds(id)).toEqual([3, null]);
    await api.db.query('update courier_endpoints set url = $2 where id = $1', [id, `${URL}/older`]);
    expect(await bounds(id)).toEqual([null, null]);
    expect((await asToken('PATCH', `/${id}`, { maxInFlight: 8 })).status).toBe(200);
  });

  it("lets the token keep or lower a value above the operator's that an earlier release's write left", async () => {
    const { id } = await createEndpoint(api, appId, { url: URL, rateLimit: 5 });
    // As an earlier release's PATCH with the admin token leaves it: the value raised, the bound not.
    await api.db.query('update courier_endpoints set rate_limit = 5000 where id = $1', [id]);
    const res = await asToken('PATCH', `/${id}`, { description: 'kept', rateLimit: 5000 });
    expect(res.status, res.text).toBe(200);
    expect((await asToken('PATCH', `/${id}`, { description: 'again' })).status).toBe(200);
    expect((await settingsOf(id)).rateLimit).toBe(5000);
    expect(await refusal(await asToken('PATCH', `/${id}`, { rateLimit: 5001 }), 'body.rateLimit')).toBe(
      "an application's token sets rateLimit up to 5000 (the endpoint's own, kept while its URL stays); more takes the admin token",
    );
    expect((await asToken('PATCH', `/${id}`, { rateLimit: 4000 })).status).toBe(200);
    expect((await settingsOf(id)).rateLimit).toBe(4000);
    // Lowered, it goes back up no further than it now is (the operator's bound is lower still),
    // below the default too.
    await refusal(await asToken('PATCH', `/${id}`, { rateLimit: 4001 }), 'body.rateLimit');
    await api.db.query('update courier_endpoints set rate_limit = 50 where id = $1', [id]);
    expect(await refusal(await asToken('PATCH', `/${id}`, { rateLimit: 60 }), 'body.rateLimit')).toBe(
      "an application's token sets rateLimit up to 50 (the endpoint's own, kept while its URL stays); more takes the admin token",
    );
  });

  it('brings raised settings down to the defaults when the token moves the endpoint, and keeps the policy', async () => {
    const raised = { maxInFlight: 50, rateLimit: 5000, retryPolicy: POLICY };
    const moveBy = async (write: (id: string) => Promise<unknown>) => {
      const { id } = await createEndpoint(api, appId, { url: URL, ...raised });
      await write(id);
      const after = (await api.request('GET', `/api/v1/app/${appId}/endpoint/${id}`)).body;
      expect(after.url).toBe(`${URL}/moved`);
      expect(await settingsOf(id)).toEqual({ maxInFlight: 8, rateLimit: 100, retryPolicy: POLICY });
    };
    const customer = new Svix(token, { serverUrl: api.url });
    await moveBy((id) => customer.endpoint.update(appId, id, { url: `${URL}/moved` }));
    await moveBy((id) => asToken('PATCH', `/${id}`, { url: `${URL}/moved` }));
    // Sent back as read, with the new URL: the portal's form.
    await moveBy((id) => asToken('PUT', `/${id}`, { url: `${URL}/moved`, ...raised }));
    // Lower values than the defaults travel as they are.
    const { id } = await createEndpoint(api, appId, { url: URL, maxInFlight: 2, rateLimit: 5 });
    expect((await asToken('PATCH', `/${id}`, { url: `${URL}/moved` })).status).toBe(200);
    expect(await settingsOf(id)).toEqual({ maxInFlight: 2, rateLimit: 5, retryPolicy: null });
    // More than the defaults, other than what the endpoint has, is refused with a new URL too.
    const { id: other } = await createEndpoint(api, appId, { url: URL, ...raised });
    expect(
      await refusal(
        await asToken('PATCH', `/${other}`, { url: `${URL}/moved`, maxInFlight: 40 }),
        'body.maxInFlight',
      ),
    ).toBe(
      "an application's token sets maxInFlight up to 8 (COURIER_MAX_IN_FLIGHT, as a new URL brings the endpoint's 50 down to it); more takes the admin token",
    );
    // Sent by its other name, the rate comes down as well; to the application's own default, above
    // COURIER_RATE_LIMIT, where it has one.
    expect((await asToken('PATCH', `/${other}`, { url: `${URL}/moved`, throttleRate: 5000 })).status).toBe(
      200,
    );
    expect(await settingsOf(other)).toEqual({ maxInFlight: 8, rateLimit: 100, retryPolicy: POLICY });
    const generous = await createApp(api, { rateLimit: 500 });
    const access = await api.request('POST', `/api/v1/auth/app-portal-access/${generous}`, { body: {} });
    const { id: third } = await createEndpoint(api, generous, { url: URL, rateLimit: 5000 });
    const moved = await api.request('PATCH', `/api/v1/app/${generous}/endpoint/${third}`, {
      token: access.body.token,
      body: { url: `${URL}/moved` },
    });
    expect(moved.status, moved.text).toBe(200);
    expect(moved.body.rateLimit).toBe(500);
  });
});
