import { Svix } from 'svix';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { statsWindow } from '../../src/api/routes/endpoint-stats.ts';
import { ManualClock } from '../../src/clock.ts';
import { claim } from '../../src/store/queries/claim.ts';
import { type Receiver, startReceiver } from '../delivery/receiver.ts';
import { BACKENDS } from '../support/databases.ts';
import { virtualWorker } from '../support/engine.ts';
import { createApp, createEndpoint, locs, publishMessage, startApi, type TestApi, TOKEN } from './support.ts';

const DAY = 86_400_000;

describe.each(BACKENDS)('endpoint stats on %s', (backend) => {
  let api: TestApi;
  let receiver: Receiver;
  let engine: ReturnType<typeof virtualWorker>;
  let appId: string;
  let ep: { id: string };
  let status = 200;
  const ids: Record<string, string> = {};
  const stats = (query = '', endpointId = ep.id) =>
    api.request('GET', `/api/v1/app/${appId}/endpoint/${endpointId}/stats${query}`);
  const at = (ms: number) => new Date(ms).toISOString();
  // Ids carry their time, and the process's id factory never goes back in time: each backend's
  // run starts a day after the previous one's.
  const start = Date.UTC(2026, 0, 1 + BACKENDS.indexOf(backend), 12);

  beforeAll(async () => {
    api = await startApi({ backend, clock: new ManualClock(start) });
    receiver = await startReceiver((_req, res) => {
      res.writeHead(status);
      res.end();
    });
    engine = virtualWorker(api.db, { clock: api.clock });
    appId = await createApp(api);
    ep = await createEndpoint(api, appId, { url: `${receiver.url}/hook` });
    // One message in each state, a second apart.
    for (const [name, answer] of [
      ['delivered', 200],
      ['failed', 410],
      ['retrying', 500],
    ] as const) {
      api.clock.advance(1000);
      status = answer;
      ids[name] = await publishMessage(api, appId);
      await engine.worker.runOnce();
    }
    api.clock.advance(1000);
    ids.sending = await publishMessage(api, appId);
    // Another worker holds it: claimed, its request not answered yet.
    const claimed = await claim(api.db, {
      owner: 'elsewhere',
      now: api.clock.now(),
      leaseMs: 60_000,
      limit: 10,
    });
    expect(claimed.deliveries.map((d) => d.messageId)).toEqual([ids.sending]);
  });
  afterAll(async () => {
    await engine.sender.close();
    await receiver.close();
    await api.close();
  });

  it('counts each message once, by where it stands at the endpoint', async () => {
    const answer = await stats();
    expect(answer.status).toBe(200);
    expect(answer.body).toEqual({ success: 1, pending: 1, sending: 1, fail: 1, canceled: 0 });
    // The official SDK reads the same.
    const svix = new Svix(TOKEN, { serverUrl: api.url });
    expect(await svix.endpoint.getStats(appId, ep.id)).toEqual({
      success: 1,
      pending: 1,
      sending: 1,
      fail: 1,
      canceled: 0,
    });
  });

  it('counts only the messages created in the window, at this endpoint', async () => {
    const first = start + 1000; // the delivered message
    expect((await stats(`?since=${at(first + 1000)}`)).body).toEqual({
      success: 0,
      pending: 1,
      sending: 1,
      fail: 1,
      canceled: 0,
    });
    expect((await stats(`?until=${at(first + 1000)}`)).body).toEqual({
      success: 1,
      pending: 0,
      sending: 0,
      fail: 1,
      canceled: 0,
    });
    expect((await stats(`?since=${at(first)}&until=${at(first)}`)).body).toEqual({
      success: 1,
      pending: 0,
      sending: 0,
      fail: 0,
      canceled: 0,
    });
    const other = await createEndpoint(api, appId, { url: `${receiver.url}/other` });
    expect((await stats('', other.id)).body).toEqual({
      success: 0,
      pending: 0,
      sending: 0,
      fail: 0,
      canceled: 0,
    });
  });

  it('counts a delivered message resent since as pending, not twice', async () => {
    const answer = await api.request(
      'POST',
      `/api/v1/app/${appId}/msg/${ids.delivered}/endpoint/${ep.id}/resend`,
    );
    expect(answer.status).toBe(202);
    expect((await stats()).body).toEqual({ success: 0, pending: 2, sending: 1, fail: 1, canceled: 0 });
    // Delivered again: two delivered attempts, one message.
    status = 200;
    expect(await engine.worker.runOnce()).toBe(1);
    expect((await stats()).body).toEqual({ success: 1, pending: 1, sending: 1, fail: 1, canceled: 0 });
  });

  it('counts held deliveries of a paused endpoint as pending', async () => {
    const paused = await createEndpoint(api, appId, { url: `${receiver.url}/paused`, filterTypes: ['held'] });
    expect((await api.request('POST', `/api/v1/app/${appId}/endpoint/${paused.id}/pause`)).status).toBe(200);
    await publishMessage(api, appId, { eventType: 'held' });
    expect((await stats('', paused.id)).body).toEqual({
      success: 0,
      pending: 1,
      sending: 0,
      fail: 0,
      canceled: 0,
    });
  });

  it('refuses a window in the future, reversed or longer than 28 days, with a coded error', async () => {
    const now = api.clock.now();
    for (const query of [
      `?until=${at(now + 10 * 60_000)}`,
      `?since=${at(now - 1000)}&until=${at(now - 2000)}`,
      `?since=${at(now - 29 * DAY)}`,
      '?until=1969-12-31T00:00:00Z',
    ]) {
      const answer = await stats(query);
      expect(answer.status, query).toBe(400);
      expect(answer.body.code).toBe('invalid_range');
      expect(answer.body.detail).toEqual(expect.any(String));
    }
    expect(locs(await stats('?since=yesterday'))).toEqual(['query.since']);
    expect(locs(await stats('?since=2026-06-30T23:59:60Z'))).toEqual(['query.since']);
    expect((await stats('', 'ep_nosuchendpoint')).status).toBe(404);
  });
});

describe('the stats window', () => {
  const now = Date.UTC(2026, 5, 1);
  it('defaults to the 28 days up to now, and allows the caller five minutes of clock skew', () => {
    expect(statsWindow({}, now)).toEqual({ since: now - 28 * DAY, until: now });
    const until = now + 4 * 60_000;
    expect(statsWindow({ until: new Date(until).toISOString() }, now)).toEqual({
      since: until - 28 * DAY,
      until,
    });
    const since = now - 28 * DAY - 4 * 60_000;
    expect(statsWindow({ since: new Date(since).toISOString() }, now)).toEqual({ since, until: now });
    expect(() => statsWindow({ since: new Date(since - 2 * 60_000).toISOString() }, now)).toThrow(/28 days/);
    // A window reaching back past 1970 starts there.
    expect(statsWindow({ until: '1970-01-02T00:00:00Z' }, now)).toEqual({ since: 0, until: DAY });
  });
});
