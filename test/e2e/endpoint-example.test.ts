import { Svix } from 'svix';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Receiver, startReceiver } from '../delivery/receiver.ts';
import { virtualWorker } from '../support/engine.ts';
import { createApp, createEndpoint, locs, startApi, type TestApi, TOKEN } from './support.ts';

describe('send-example (POST /app/{app}/endpoint/{ep}/send-example)', () => {
  let api: TestApi;
  let receiver: Receiver;
  let engine: ReturnType<typeof virtualWorker>;
  let appId: string;
  let picky: { id: string };
  beforeAll(async () => {
    api = await startApi();
    receiver = await startReceiver((_req, res) => {
      res.writeHead(200);
      res.end();
    });
    engine = virtualWorker(api.db, { clock: api.clock });
    appId = await createApp(api);
    await api.request('POST', '/api/v1/event-type', {
      body: {
        name: 'invoice.paid',
        description: 'An invoice was paid',
        schemas: { '1': { type: 'object', examples: [{ invoice: 1 }, { invoice: 2 }, 'not an object'] } },
      },
    });
    await api.request('POST', '/api/v1/event-type', { body: { name: 'bare', description: 'No schema' } });
    await api.request('POST', '/api/v1/event-type', {
      body: {
        name: 'order.shipped',
        description: 'Its schema has no examples',
        schemas: {
          '1': {
            type: 'object',
            required: ['order'],
            properties: { order: { type: 'string' }, shippedAt: { type: 'string', format: 'date-time' } },
          },
        },
      },
    });
    await api.request('POST', '/api/v1/event-type', {
      body: { name: 'just.text', description: 'Not an object', schemas: { '1': { type: 'string' } } },
    });
    await api.request('POST', '/api/v1/event-type', {
      body: {
        name: 'endless',
        description: 'Requires itself',
        schemas: { '1': { type: 'object', required: ['next'], properties: { next: { $ref: '#' } } } },
      },
    });
    picky = await createEndpoint(api, appId, { url: `${receiver.url}/picky`, filterTypes: ['other'] });
    await createEndpoint(api, appId, { url: `${receiver.url}/all` });
  });
  afterAll(async () => {
    await engine.sender.close();
    await receiver.close();
    await api.close();
  });

  const sendExample = (body: unknown, ep = picky.id) =>
    api.request('POST', `/api/v1/app/${appId}/endpoint/${ep}/send-example`, { body });
  const sent = () => receiver.requests.map((r) => [r.url, r.headers['webhook-id'], r.body.toString()]);

  it("sends the chosen example of the type's schema to this endpoint alone, whatever its filter", async () => {
    const res = await sendExample({ eventType: 'invoice.paid', exampleIndex: 1 });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      id: expect.stringMatching(/^msg_/),
      eventType: 'invoice.paid',
      payload: { invoice: 2 },
      channels: null,
      tags: ['courier.example'],
      timestamp: new Date(api.clock.now()).toISOString(),
    });
    await engine.worker.runOnce();
    expect(sent()).toEqual([['/picky', res.body.id, '{"invoice":2}']]);
    // A message like any other, sent by hand.
    const listed = await api.request('GET', `/api/v1/app/${appId}/msg`);
    expect(listed.body.data.map((m: { id: string }) => m.id)).toEqual([res.body.id]);
    const attempts = await api.request('GET', `/api/v1/app/${appId}/attempt/endpoint/${picky.id}`);
    expect(attempts.body.data[0]).toMatchObject({ msgId: res.body.id, triggerType: 1, status: 0 });
  });

  it('is not replayed to an endpoint that never had it, and a publish may not pose as one', async () => {
    receiver.requests.length = 0;
    const all = (await api.request('GET', `/api/v1/app/${appId}/endpoint`)).body.data.find(
      (e: { url: string }) => e.url.endsWith('/all'),
    );
    const replay = await api.request('POST', `/api/v1/app/${appId}/endpoint/${all.id}/replay-missing`, {
      body: { since: new Date(0).toISOString() },
    });
    expect(replay.body.replayed).toBe(0);
    const posing = await api.request('POST', `/api/v1/app/${appId}/msg`, {
      body: { eventType: 'invoice.paid', payload: {}, tags: ['courier.example'] },
    });
    expect([posing.status, locs(posing)]).toEqual([422, ['body.tags']]);
  });

  it('makes one message for one idempotency key, however often the request comes', async () => {
    const headers = { 'idempotency-key': 'example-once' };
    const body = { eventType: 'svix.ping' };
    const path = `/api/v1/app/${appId}/endpoint/${picky.id}/send-example`;
    const [first, second] = [
      await api.request('POST', path, { body, headers }),
      await api.request('POST', path, { body, headers }),
    ];
    expect(second.body.id).toBe(first.body.id);
    const { rows } = await api.db.query<{ n: number }>(
      `select count(*)::int as n from courier_messages where event_type = 'svix.ping' and id = $1`,
      [first.body.id],
    );
    expect(rows[0]!.n).toBe(1);
    await engine.worker.runOnce();
  });

  it('sends svix.ping as Svix does, through the official SDK too', async () => {
    receiver.requests.length = 0;
    const svix = new Svix(TOKEN, { serverUrl: api.url });
    const message = await svix.endpoint.sendExample(appId, picky.id, { eventType: 'svix.ping' });
    expect(message).toMatchObject({ eventType: 'svix.ping', payload: { success: true } });
    await engine.worker.runOnce();
    expect(sent()).toEqual([['/picky', message.id, '{"success":true}']]);
  });

  it('holds it while the endpoint is paused', async () => {
    receiver.requests.length = 0;
    await api.request('POST', `/api/v1/app/${appId}/endpoint/${picky.id}/pause`);
    expect((await sendExample({ eventType: 'invoice.paid' })).status).toBe(200);
    await engine.worker.runOnce();
    expect(sent()).toEqual([]);
    await api.request('POST', `/api/v1/app/${appId}/endpoint/${picky.id}/resume`);
    api.clock.advance(60_000);
    await engine.worker.runOnce();
    expect(sent().map((s) => s[2])).toEqual(['{"invoice":1}']);
  });

  it("makes a payload from the type's schema when it has no examples", async () => {
    receiver.requests.length = 0;
    const res = await sendExample({ eventType: 'order.shipped' });
    expect(res.status).toBe(200);
    const payload = { order: 'string', shippedAt: new Date(api.clock.now()).toISOString() };
    expect(res.body.payload).toEqual(payload);
    await engine.worker.runOnce();
    expect(sent()).toEqual([['/picky', res.body.id, JSON.stringify(payload)]]);
  });

  it('refuses what it cannot send, storing nothing', async () => {
    const before = (await api.request('GET', `/api/v1/app/${appId}/msg`)).body.data.length;
    const unknownType = await sendExample({ eventType: 'nope' });
    expect([unknownType.status, unknownType.body.code]).toEqual([404, 'not_found']);
    const bare = await sendExample({ eventType: 'bare' });
    expect([bare.status, bare.body.code]).toEqual([400, 'invalid_scheme']);
    expect(bare.body.detail).toMatch(/bare has no schema/);
    const text = await sendExample({ eventType: 'just.text' });
    expect([text.status, text.body.code]).toEqual([400, 'invalid_scheme']);
    expect(text.body.detail).toMatch(/not a JSON object/);
    const endless = await sendExample({ eventType: 'endless' });
    expect([endless.status, endless.body.code]).toEqual([400, 'invalid_scheme']);
    expect(endless.body.detail).toBe(
      'Cannot make an example of event type endless: the schema admits no value that can be made',
    );
    const noSecond = await sendExample({ eventType: 'order.shipped', exampleIndex: 1 });
    expect([noSecond.status, locs(noSecond)]).toEqual([422, ['body.exampleIndex']]);
    const notObject = await sendExample({ eventType: 'invoice.paid', exampleIndex: 2 });
    expect([notObject.status, notObject.body.code]).toEqual([400, 'invalid_scheme']);
    const beyond = await sendExample({ eventType: 'invoice.paid', exampleIndex: 3 });
    expect([beyond.status, locs(beyond)]).toEqual([422, ['body.exampleIndex']]);
    expect(locs(await sendExample({}))).toEqual(['body.eventType']);
    const disabled = await createEndpoint(api, appId, { url: `${receiver.url}/off`, disabled: true });
    const refused = await sendExample({ eventType: 'svix.ping' }, disabled.id);
    expect([refused.status, refused.body.code]).toEqual([409, 'endpoint_disabled']);
    const unknownEndpoint = await sendExample({ eventType: 'svix.ping' }, 'ep_unknown');
    expect([unknownEndpoint.status, unknownEndpoint.body.code]).toEqual([404, 'not_found']);
    expect((await api.request('GET', `/api/v1/app/${appId}/msg`)).body.data).toHaveLength(before);
  });
});
