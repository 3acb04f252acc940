/**
 * Svix's event type feature flags: an event type with flags is shown to an application's token
 * (listed, read, sent as an example) only when the token was made with one of them; the admin
 * token sees every one. Checked with the official SDK as well as raw requests.
 */
import { Svix } from 'svix';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Answer, createApp, createEndpoint, locs, startApi, type TestApi, TOKEN } from './support.ts';

describe('event type feature flags', () => {
  let api: TestApi;
  let appId: string;
  let endpointId: string;

  const create = async (body: Record<string, unknown>) => {
    const schemas = { '1': { type: 'object', examples: [{ n: 1 }] } };
    const res = await api.request('POST', '/api/v1/event-type', {
      body: { description: 'd', schemas, ...body },
    });
    expect(res.status, res.text).toBe(201);
    return res.body;
  };
  const tokenWith = async (featureFlags?: string[]) => {
    const body = featureFlags ? { featureFlags } : {};
    const res = await api.request('POST', `/api/v1/auth/app-portal-access/${appId}`, { body });
    expect(res.status, res.text).toBe(200);
    return res.body.token as string;
  };
  /** Every name the token lists, one per page, so that each page's filter and `done` are used. */
  const listed = async (token: string) => {
    const names: string[] = [];
    let iterator: string | null = null;
    for (;;) {
      const page: Answer = await api.request(
        'GET',
        `/api/v1/event-type?limit=1${iterator ? `&iterator=${iterator}` : ''}`,
        { token },
      );
      expect(page.status, page.text).toBe(200);
      names.push(...page.body.data.map((e: { name: string }) => e.name));
      if (page.body.done) return names;
      iterator = page.body.iterator;
    }
  };

  beforeAll(async () => {
    api = await startApi();
    appId = await createApp(api);
    endpointId = (await createEndpoint(api, appId, { url: 'https://hooks.customer.example/in' })).id;
    await create({ name: 'a.plain' });
    await create({ name: 'b.beta', featureFlags: ['beta'] });
    await create({ name: 'c.legacy', featureFlag: 'legacy' });
    await create({ name: 'd.either', featureFlags: ['beta', 'enterprise'] });
    await create({ name: 'e.plain', featureFlags: [] });
    await create({ name: 'f.enterprise', featureFlag: 'enterprise', featureFlags: ['enterprise'] });
  });
  afterAll(() => api.close());

  it('stores the flags, from featureFlags or the older featureFlag, and shows both fields', async () => {
    const get = async (name: string) => (await api.request('GET', `/api/v1/event-type/${name}`)).body;
    expect(await get('b.beta')).toMatchObject({ featureFlags: ['beta'], featureFlag: 'beta' });
    expect(await get('c.legacy')).toMatchObject({ featureFlags: ['legacy'], featureFlag: 'legacy' });
    expect(await get('d.either')).toMatchObject({
      featureFlags: ['beta', 'enterprise'],
      featureFlag: 'beta',
    });
    expect(await get('e.plain')).toMatchObject({ featureFlags: null, featureFlag: null });
    expect(await get('f.enterprise')).toMatchObject({ featureFlags: ['enterprise'] });

    // featureFlags, when sent, is what counts; featureFlag only without it.
    expect((await create({ name: 'g.both', featureFlag: 'x', featureFlags: ['y'] })).featureFlags).toEqual([
      'y',
    ]);
    expect((await create({ name: 'g.null', featureFlag: 'x', featureFlags: null })).featureFlags).toBeNull();
    const bad = await api.request('POST', '/api/v1/event-type', {
      body: { name: 'g.bad', description: 'd', featureFlags: ['no spaces'] },
    });
    expect(bad.status).toBe(422);
    expect(locs(bad)).toEqual(['body.featureFlags.0']);
    expect((await api.request('GET', '/api/v1/event-type/g.bad')).status).toBe(404);
    for (const name of ['g.both', 'g.null'])
      expect((await api.request('DELETE', `/api/v1/event-type/${name}?expunge=true`)).status).toBe(204);
  });

  it('lists and reads for a token only the event types without flags or with one of its own', async () => {
    const all = ['a.plain', 'b.beta', 'c.legacy', 'd.either', 'e.plain', 'f.enterprise'];
    expect(await listed(TOKEN)).toEqual(all);
    expect(await listed(await tokenWith())).toEqual(['a.plain', 'e.plain']);
    const beta = await tokenWith(['beta']);
    expect(await listed(beta)).toEqual(['a.plain', 'b.beta', 'd.either', 'e.plain']);
    expect(await listed(await tokenWith(['legacy', 'enterprise']))).toEqual([
      'a.plain',
      'c.legacy',
      'd.either',
      'e.plain',
      'f.enterprise',
    ]);
    expect((await api.request('GET', '/api/v1/event-type/b.beta', { token: beta })).status).toBe(200);
    // A token is shown the flags it holds alone: another's may name a plan or a customer.
    expect((await api.request('GET', '/api/v1/event-type/d.either', { token: beta })).body).toMatchObject({
      featureFlags: ['beta'],
      featureFlag: 'beta',
    });
    const hidden = await api.request('GET', '/api/v1/event-type/c.legacy', { token: beta });
    expect(hidden.status).toBe(404);
    expect(hidden.body).toEqual({ code: 'not_found', detail: 'Event type c.legacy not found' });

    // The official SDK, as an app portal would use it.
    const admin = new Svix(TOKEN, { serverUrl: api.url });
    const access = await admin.authentication.appPortalAccess(appId, { featureFlags: ['enterprise'] });
    const customer = new Svix(access.token, { serverUrl: api.url });
    const seen = await customer.eventType.list({ limit: 50 });
    expect(seen.data.map((e) => e.name)).toEqual(['a.plain', 'd.either', 'e.plain', 'f.enterprise']);
    expect(seen.data.find((e) => e.name === 'd.either')?.featureFlags).toEqual(['enterprise']);
    await expect(customer.eventType.get('b.beta')).rejects.toMatchObject({ code: 404 });
    expect((await admin.eventType.get('d.either')).featureFlags).toEqual(['beta', 'enterprise']);
  });

  it('keeps a hidden event type hidden among the archived ones', async () => {
    await create({ name: 'k.archived', featureFlags: ['beta'] });
    expect((await api.request('DELETE', '/api/v1/event-type/k.archived')).status).toBe(204);
    const archived = async (token: string) =>
      (
        await api.request('GET', '/api/v1/event-type?include_archived=true&with_content=true', { token })
      ).body.data
        .map((e: { name: string }) => e.name)
        .filter((name: string) => name === 'k.archived');
    expect(await archived(await tokenWith())).toEqual([]);
    expect(await archived(await tokenWith(['beta']))).toEqual(['k.archived']);
    expect((await api.request('DELETE', '/api/v1/event-type/k.archived?expunge=true')).status).toBe(204);
  });

  it('sends no example of an event type the token may not see: the example would show its schema', async () => {
    const send = (token: string, eventType: string) =>
      api.request('POST', `/api/v1/app/${appId}/endpoint/${endpointId}/send-example`, {
        token,
        body: { eventType },
      });
    const plain = await tokenWith();
    const hidden = await send(plain, 'b.beta');
    expect(hidden.status).toBe(404);
    expect(hidden.body.detail).toBe('Event type b.beta not found');
    expect((await send(plain, 'a.plain')).status).toBe(200);
    expect((await send(await tokenWith(['beta']), 'b.beta')).status).toBe(200);
    expect((await send(TOKEN, 'c.legacy')).status).toBe(200);
  });

  it("lets a token filter an endpoint by the event types it sees alone, the endpoint's own kept", async () => {
    await create({ name: 'g.archived' });
    expect((await api.request('DELETE', '/api/v1/event-type/g.archived')).status).toBe(204);
    const base = `/api/v1/app/${appId}/endpoint`;
    const url = 'https://hooks.customer.example/filtered';
    const plain = await tokenWith();
    // Hidden, archived or missing: alike, none of them is there for this token.
    const refused = await api.request('POST', base, {
      token: plain,
      body: { url, filterTypes: ['a.plain', 'b.beta', 'g.archived', 'no.such'] },
    });
    expect(refused.status, refused.text).toBe(422);
    expect(refused.body.detail).toEqual([
      {
        loc: ['body', 'filterTypes'],
        msg: "The following event types don't exist: b.beta, g.archived, no.such",
        type: 'value_error',
      },
    ]);
    const byAlias = await api.request('POST', base, {
      token: plain,
      body: { url, eventTypes: ['c.legacy'] },
    });
    expect(byAlias.status, byAlias.text).toBe(422);
    expect(locs(byAlias)).toEqual(['body.eventTypes']);
    expect(byAlias.body.detail[0].msg).toBe("The following event types don't exist: c.legacy");
    const filtered = async () =>
      (await api.request('GET', base)).body.data.filter((e: { url: string }) => e.url === url);
    expect(await filtered()).toEqual([]);

    const made = await api.request('POST', base, {
      token: plain,
      body: { url, filterTypes: ['a.plain', 'e.plain'] },
    });
    expect(made.status, made.text).toBe(201);
    const path = `${base}/${made.body.id}`;
    const withBeta = await api.request('PATCH', path, {
      token: await tokenWith(['beta']),
      body: { filterTypes: ['a.plain', 'b.beta', 'd.either'] },
    });
    expect(withBeta.status, withBeta.text).toBe(200);
    // The operator names any: flagged ones, and names the catalogue does not hold (yet).
    const byOperator = await api.request('PATCH', path, {
      body: { filterTypes: ['a.plain', 'b.beta', 'd.either', 'f.enterprise', 'not.yet'] },
    });
    expect(byOperator.status, byOperator.text).toBe(200);
    // The token's SDK sends the filter back as it read it: what the endpoint has is kept.
    const customer = new Svix(plain, { serverUrl: api.url });
    const read = await customer.endpoint.get(appId, made.body.id);
    const updated = await customer.endpoint.update(appId, made.body.id, {
      url,
      filterTypes: read.filterTypes,
      description: 'kept filter',
    });
    expect([...(updated.filterTypes ?? [])].sort()).toEqual([
      'a.plain',
      'b.beta',
      'd.either',
      'f.enterprise',
      'not.yet',
    ]);
    // One more it does not see is refused, named alone.
    const more = await api.request('PATCH', path, {
      token: plain,
      body: { filterTypes: [...(read.filterTypes ?? []), 'c.legacy'] },
    });
    expect(more.status, more.text).toBe(422);
    expect(more.body.detail[0].msg).toBe("The following event types don't exist: c.legacy");
    expect((await api.request('DELETE', '/api/v1/event-type/g.archived?expunge=true')).status).toBe(204);
  });

  it('keeps the flags through a PATCH without them, and clears them with null, a PUT, or an empty list', async () => {
    await create({ name: 'h.flagged', featureFlags: ['beta'] });
    const flagsOf = async () =>
      (await api.request('GET', '/api/v1/event-type/h.flagged')).body.featureFlags as string[] | null;
    const write = async (method: string, body: Record<string, unknown>) => {
      const res = await api.request(method, '/api/v1/event-type/h.flagged', { body });
      expect(res.status, res.text).toBe(200);
    };
    await write('PATCH', { description: 'kept' });
    expect(await flagsOf()).toEqual(['beta']);
    await write('PATCH', { featureFlags: null });
    expect(await flagsOf()).toBeNull();
    await write('PATCH', { featureFlag: 'legacy' });
    expect(await flagsOf()).toEqual(['legacy']);
    await write('PUT', { description: 'replaced' });
    expect(await flagsOf()).toBeNull();
    await write('PUT', { description: 'd', featureFlags: ['a', 'b'] });
    await write('PATCH', { featureFlags: [] });
    expect(await flagsOf()).toBeNull();
  });

  it('keeps the flags an OpenAPI document gives its webhooks', async () => {
    const spec = {
      openapi: '3.1.0',
      webhooks: {
        'i.imported': { post: { summary: 'flagged', 'x-svix-feature-flags': ['beta', 'early'] } },
        'j.imported': { post: { summary: 'older form', 'x-svix-feature-flag': 'early' } },
      },
    };
    const res = await api.request('POST', '/api/v1/event-type/import/openapi', { body: { spec } });
    expect(res.status, res.text).toBe(200);
    const flagsOf = async (name: string) =>
      (await api.request('GET', `/api/v1/event-type/${name}`)).body.featureFlags;
    expect(await flagsOf('i.imported')).toEqual(['beta', 'early']);
    expect(await flagsOf('j.imported')).toEqual(['early']);
    // The same document again, its flags in another order, changes nothing; other flags are a change,
    // and so is a document without them: an import replaces, as a PUT does.
    const dryRun = async () =>
      (
        await api.request('POST', '/api/v1/event-type/import/openapi', { body: { spec, dryRun: true } })
      ).body.data.to_modify.map((t: { name: string }) => t.name);
    spec.webhooks['i.imported'].post['x-svix-feature-flags'] = ['early', 'beta'];
    expect(await dryRun()).toEqual([]);
    spec.webhooks['j.imported'].post['x-svix-feature-flag'] = 'beta';
    expect(await dryRun()).toEqual(['j.imported']);
    delete (spec.webhooks['i.imported'].post as Record<string, unknown>)['x-svix-feature-flags'];
    const cleared = await api.request('POST', '/api/v1/event-type/import/openapi', { body: { spec } });
    expect(cleared.status, cleared.text).toBe(200);
    expect(await flagsOf('i.imported')).toBeNull();
  });

  it('exports and imports the flags with the environment', async () => {
    const exported = (await api.request('POST', '/api/v1/environment/export', { body: {} })).body;
    const other = await startApi();
    try {
      const res = await other.request('POST', '/api/v1/environment/import', { body: exported });
      expect(res.status, res.text).toBe(204);
      const copied = (await other.request('GET', '/api/v1/event-type/d.either')).body;
      expect(copied.featureFlags).toEqual(['beta', 'enterprise']);
    } finally {
      await other.close();
    }
  });
});
