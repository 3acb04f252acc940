import { BackgroundTaskType, Svix } from 'svix';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resendDelivery } from '../../src/store/queries/resend.ts';
import { type Receiver, startReceiver } from '../delivery/receiver.ts';
import { virtualWorker } from '../support/engine.ts';
import { createApp, createEndpoint, locs, startApi, type TestApi, TOKEN } from './support.ts';

describe('bulk replay (POST /app/{app}/endpoint/{ep}/bulk-replay)', () => {
  let api: TestApi;
  let receiver: Receiver;
  let engine: ReturnType<typeof virtualWorker>;
  let appId: string;
  let ep: { id: string };
  const ids: Record<string, string> = {};
  let start: number;
  let refusing = true;
  beforeAll(async () => {
    api = await startApi();
    // 410 (a dead letter at once) for the message whose payload says so, until the setup is done.
    receiver = await startReceiver((_req, res, body) => {
      res.writeHead(refusing && body.toString().includes('"refuse":true') ? 410 : 200);
      res.end();
    });
    engine = virtualWorker(api.db, { clock: api.clock });
    appId = await createApp(api);
    ep = await createEndpoint(api, appId, { url: `${receiver.url}/hook`, filterTypes: ['a', 'b'] });
    await createEndpoint(api, appId, { url: `${receiver.url}/other`, filterTypes: ['c'] });
    start = api.clock.now();
    const publish = async (name: string, body: Record<string, unknown>) => {
      api.clock.advance(1000);
      ids[name] = (
        await api.request('POST', `/api/v1/app/${appId}/msg`, { body: { payload: {}, ...body } })
      ).body.id;
    };
    await publish('a1', { eventType: 'a' });
    await publish('b1', { eventType: 'b', tags: ['t'] });
    await publish('dead', { eventType: 'a', channels: ['x'], payload: { refuse: true } });
    await publish('expunged', { eventType: 'a' });
    await publish('otherOnly', { eventType: 'c' });
    await engine.worker.runOnce();
    await api.request('DELETE', `/api/v1/app/${appId}/msg/${ids.expunged}/content`);
    receiver.requests.length = 0;
    refusing = false;
  });
  afterAll(async () => {
    await engine.sender.close();
    await receiver.close();
    await api.close();
  });

  const bulk = (body: Record<string, unknown>) =>
    api.request('POST', `/api/v1/app/${appId}/endpoint/${ep.id}/bulk-replay`, {
      body: { since: new Date(start).toISOString(), ...body },
    });
  /** Replays with these filters and says which messages went out again. */
  const replayedBy = async (body: Record<string, unknown>) => {
    const res = await bulk(body);
    expect(res.status).toBe(202);
    receiver.requests.length = 0;
    api.clock.advance(1000);
    await engine.worker.runOnce();
    const sent = receiver.requests.map((r) =>
      Object.keys(ids).find((k) => ids[k] === r.headers['webhook-id']),
    );
    expect(res.body.replayed).toBe(sent.length);
    return sent.sort();
  };

  it('resends what matches the filters, of what was sent to the endpoint', async () => {
    expect(await replayedBy({ statusCodeClass: 400 })).toEqual(['dead']); // its 410
    expect(await replayedBy({ status: 2 })).toEqual([]); // delivered now
    expect(await replayedBy({ eventTypes: ['b'] })).toEqual(['b1']);
    expect(await replayedBy({ tag: 't' })).toEqual(['b1']);
    expect(await replayedBy({ channel: 'x' })).toEqual(['dead']);
    expect(await replayedBy({ statusCodeClass: 200, eventTypes: ['a'] })).toEqual(['a1', 'dead']);
    expect(await replayedBy({ until: new Date(start + 2500).toISOString() })).toEqual(['a1', 'b1']);
    // Everything it had, but the expunged one; never otherOnly, which was not its to get.
    expect(await replayedBy({})).toEqual(['a1', 'b1', 'dead']);
  });

  it('does not send again what was delivered since it was chosen as waiting, dead or in flight', async () => {
    // As bulk replay resends what a status filter listed: a1 was delivered (no queued delivery).
    const outcome = await api.db.transaction((tx) =>
      resendDelivery(tx, { messageId: ids.a1!, endpointId: ep.id, now: api.clock.now(), onlyQueued: true }),
    );
    expect(outcome).toBe('not_queued');
    const { rows } = await api.db.query('select 1 from courier_deliveries where message_id = $1', [ids.a1]);
    expect(rows).toEqual([]);
    expect((await bulk({ status: 4 })).body.replayed).toBe(0); // canceled: Courier cancels none
  });

  it('answers as Svix, through the official SDK', async () => {
    const svix = new Svix(TOKEN, { serverUrl: api.url });
    const task = await svix.endpoint.bulkReplay(appId, ep.id, { since: new Date(start), eventTypes: ['b'] });
    expect(task).toMatchObject({ status: 'finished', task: BackgroundTaskType.EndpointBulkReplay });
  });

  it('refuses an empty range, an unknown status and an unknown endpoint', async () => {
    const swapped = await bulk({ until: new Date(start - 1).toISOString() });
    expect([swapped.status, locs(swapped)]).toEqual([422, ['body.until']]);
    expect(locs(await bulk({ status: 7 }))).toEqual(['body.status']);
    const unknown = await api.request('POST', `/api/v1/app/${appId}/endpoint/ep_unknown/bulk-replay`, {
      body: { since: new Date(start).toISOString() },
    });
    expect([unknown.status, unknown.body.code]).toEqual([404, 'not_found']);
  });
});
