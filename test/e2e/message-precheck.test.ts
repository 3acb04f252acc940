import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp, createEndpoint, locs, startApi, type TestApi } from './support.ts';

describe('message precheck (POST /app/{app}/msg/precheck/active)', () => {
  let api: TestApi;
  let appId: string;
  beforeAll(async () => {
    api = await startApi();
    appId = await createApp(api);
    const url = 'https://example.com/hook';
    await createEndpoint(api, appId, { url, filterTypes: ['a'], channels: ['eu'] });
    await createEndpoint(api, appId, { url, filterTypes: ['b'], disabled: true });
    const paused = await createEndpoint(api, appId, { url, filterTypes: ['c'] });
    await api.request('POST', `/api/v1/app/${appId}/endpoint/${paused.id}/pause`);
    const deleted = await createEndpoint(api, appId, { url, filterTypes: ['d'] });
    await api.request('DELETE', `/api/v1/app/${appId}/endpoint/${deleted.id}`);
  });
  afterAll(() => api.close());

  const precheck = (body: unknown, app = appId) =>
    api.request('POST', `/api/v1/app/${app}/msg/precheck/active`, { body });

  it('says whether an endpoint would take the message now, as a publish decides', async () => {
    const cases: [unknown, boolean][] = [
      [{ eventType: 'a' }, false], // its endpoint takes channel eu only
      [{ eventType: 'a', channels: ['eu', 'us'] }, true],
      [{ eventType: 'a', channels: [] }, false],
      [{ eventType: 'b' }, false], // disabled
      [{ eventType: 'c', channels: null }, true], // paused: it would be held
      [{ eventType: 'd' }, false], // deleted
      [{ eventType: 'e' }, false],
    ];
    for (const [body, active] of cases) {
      const res = await precheck(body);
      expect([body, res.status, res.body]).toEqual([body, 200, { active }]);
    }
    // A publish agrees.
    for (const [body, active] of cases) {
      const sent = await api.request('POST', `/api/v1/app/${appId}/msg`, {
        body: { ...(body as object), payload: {} },
      });
      const { rows } = await api.db.query<{ n: number }>(
        `select count(*)::int as n from courier_deliveries where message_id = $1`,
        [sent.body.id],
      );
      expect([body, rows[0]!.n > 0]).toEqual([body, active]);
    }
  });

  it('refuses a bad event type and an unknown application', async () => {
    expect(locs(await precheck({}))).toEqual(['body.eventType']);
    expect(locs(await precheck({ eventType: 'bad type!' }))).toEqual(['body.eventType']);
    const unknown = await precheck({ eventType: 'a' }, 'app_unknown');
    expect([unknown.status, unknown.body.code]).toEqual([404, 'not_found']);
  });
});
