import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signingSecrets } from '../support/fixtures.ts';
import { createApp, createEndpoint, locs, startApi, type TestApi } from './support.ts';

describe('endpoint secrets', () => {
  let api: TestApi;
  let appId: string;
  beforeAll(async () => {
    api = await startApi();
    appId = await createApp(api);
  });
  afterAll(() => api.close());

  it('generates a secret, rotates it with a grace period, and accepts a given key', async () => {
    const ep = await createEndpoint(api, appId, { url: 'https://example.com/x' });
    const base = `/api/v1/app/${appId}/endpoint/${ep.id}/secret`;
    const first = (await api.request('GET', base)).body.key;
    expect(first).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);

    const rotate = await api.request('POST', `${base}/rotate`, { body: {} });
    expect(rotate.status).toBe(204);
    const second = (await api.request('GET', base)).body.key;
    expect(second).not.toBe(first);
    // Both sign during the default 24 h grace period, then only the new one.
    expect(await signingSecrets(api.db, ep.id, api.clock.now())).toEqual([second, first]);
    expect(await signingSecrets(api.db, ep.id, api.clock.now() + 24 * 3600_000 + 1)).toEqual([second]);

    const chosen = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
    const given = await api.request('POST', `${base}/rotate`, {
      body: { key: chosen, gracePeriodSeconds: 60 },
    });
    expect(given.status).toBe(204);
    expect((await api.request('GET', base)).body.key).toBe(chosen);
    // The replaced one signs for its 60 s; the first keeps the 24 h its own rotation gave it.
    expect(await signingSecrets(api.db, ep.id, api.clock.now() + 61_000)).toEqual([chosen, first]);
    expect(await signingSecrets(api.db, ep.id, api.clock.now() + 24 * 3600_000 + 1)).toEqual([chosen]);

    // No body at all is fine too (the SDK may send none).
    expect((await api.request('POST', `${base}/rotate`)).status).toBe(204);
    const third = (await api.request('GET', base)).body.key;

    // PATCH with a secret replaces the current one at once (no grace period); the same secret again
    // changes nothing.
    const replaced = 'whsec_' + Buffer.alloc(32, 7).toString('base64');
    for (let i = 0; i < 2; i++) {
      const patch = await api.request('PATCH', `/api/v1/app/${appId}/endpoint/${ep.id}`, {
        body: { secret: replaced },
      });
      expect(patch.status).toBe(200);
    }
    const signing = await signingSecrets(api.db, ep.id, api.clock.now());
    expect(signing[0]).toBe(replaced);
    expect(signing).not.toContain(third);
    expect(await signingSecrets(api.db, ep.id, api.clock.now() + 24 * 3600_000 + 1)).toEqual([replaced]);
  });

  it('keeps at most five earlier secrets signing beside the current one', async () => {
    const ep = await createEndpoint(api, appId, { url: 'https://example.com/x' });
    const base = `/api/v1/app/${appId}/endpoint/${ep.id}/secret`;
    for (let i = 0; i < 5; i++) expect((await api.request('POST', `${base}/rotate`)).status).toBe(204);
    const sixth = await api.request('POST', `${base}/rotate`);
    expect(sixth.status).toBe(400);
    expect(sixth.body.code).toBe('limit_reached');
    expect(await signingSecrets(api.db, ep.id, api.clock.now())).toHaveLength(6);
    // Without a grace period the replaced one stops at once: no earlier secret is added.
    const now = await api.request('POST', `${base}/rotate`, { body: { gracePeriodSeconds: 0 } });
    expect(now.status).toBe(204);
  });

  it('makes an earlier secret, still in its grace period, current again without signing twice with it', async () => {
    const ep = await createEndpoint(api, appId, { url: 'https://example.com/x' });
    const base = `/api/v1/app/${appId}/endpoint/${ep.id}/secret`;
    const first = (await api.request('GET', base)).body.key;
    expect((await api.request('POST', `${base}/rotate`)).status).toBe(204);
    const second = (await api.request('GET', base)).body.key;
    expect((await api.request('POST', `${base}/rotate`, { body: { key: first } })).status).toBe(204);
    expect((await api.request('GET', base)).body.key).toBe(first);
    expect(await signingSecrets(api.db, ep.id, api.clock.now())).toEqual([first, second]);
    // At the limit, giving back an earlier secret adds none: it is allowed.
    for (let i = 0; i < 4; i++) expect((await api.request('POST', `${base}/rotate`)).status).toBe(204);
    expect(await signingSecrets(api.db, ep.id, api.clock.now())).toHaveLength(6);
    expect((await api.request('POST', `${base}/rotate`, { body: { key: second } })).status).toBe(204);
    const signing = await signingSecrets(api.db, ep.id, api.clock.now());
    expect(signing).toHaveLength(6);
    expect(signing[0]).toBe(second);
    expect(new Set(signing).size).toBe(6);
  });

  it('refuses malformed keys and grace periods', async () => {
    const ep = await createEndpoint(api, appId, { url: 'https://example.com/x' });
    const base = `/api/v1/app/${appId}/endpoint/${ep.id}/secret`;
    const before = (await api.request('GET', base)).body.key;
    // An empty key is a caller's unset variable, not a request for a generated secret.
    for (const body of [{ key: 'whsec_!!!' }, { key: 'whsec_c2hvcnQ=' }, { key: 5 }, { key: '' }]) {
      const res = await api.request('POST', `${base}/rotate`, { body });
      expect(res.status, JSON.stringify(body)).toBe(422);
      expect(locs(res)).toEqual(['body.key']);
    }
    expect(locs(await api.request('POST', `${base}/rotate`, { body: { gracePeriodSeconds: -1 } }))).toEqual([
      'body.gracePeriodSeconds',
    ]);
    expect((await api.request('GET', base)).body.key).toBe(before);
    const empty = await api.request('POST', `/api/v1/app/${appId}/endpoint`, {
      body: { url: 'https://example.com/y', secret: '' },
    });
    expect([empty.status, locs(empty)]).toEqual([422, ['body.secret']]);
    expect((await api.request('GET', `/api/v1/app/${appId}/endpoint/nope/secret`)).status).toBe(404);
  });
});
