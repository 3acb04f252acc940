/** The API on the embedded store (PGlite): the main paths, to catch dialect or driver differences. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Receiver, startReceiver } from '../delivery/receiver.ts';
import { virtualWorker } from '../support/engine.ts';
import { createApp, createEndpoint, locs, startApi, type TestApi } from './support.ts';

describe('API on PGlite', () => {
  let api: TestApi;
  let receiver: Receiver;
  beforeAll(async () => {
    api = await startApi({ backend: 'pglite' });
    receiver = await startReceiver((_req, res) => {
      res.writeHead(200);
      res.end('ok');
    });
  });
  afterAll(async () => {
    await receiver.close();
    await api.close();
  });

  it('publishes idempotently, delivers, lists attempts and resends', async () => {
    const appId = await createApp(api, { uid: 'lite' });
    const ep = await createEndpoint(api, appId, { url: `${receiver.url}/hook`, headers: { 'X-Lite': '1' } });
    const body = { eventType: 'lite.event', payload: { a: [1, 2] }, eventId: 'lite-1' };
    const headers = { 'idempotency-key': 'lite-key' };
    const first = await api.request('POST', '/api/v1/app/lite/msg', { body, headers });
    const again = await api.request('POST', '/api/v1/app/lite/msg', { body, headers });
    expect(first.status).toBe(202);
    expect(again.body.id).toBe(first.body.id);
    expect((await api.request('POST', '/api/v1/app/lite/msg', { body })).status).toBe(409);

    const { worker, sender } = virtualWorker(api.db, { clock: api.clock });
    expect(await worker.runOnce()).toBe(1);
    const attempts = await api.request('GET', `/api/v1/app/lite/attempt/endpoint/${ep.id}`);
    expect(attempts.body.data).toMatchObject([{ msgId: first.body.id, status: 0, responseStatusCode: 200 }]);
    expect((await api.request('POST', `/api/v1/app/lite/msg/lite-1/endpoint/${ep.id}/resend`)).status).toBe(
      202,
    );
    const resent = await api.request('GET', '/api/v1/app/lite/msg/lite-1/endpoint');
    expect(resent.body.data).toMatchObject([{ id: ep.id, statusText: 'pending', attempts: 0 }]);
    expect(await worker.runOnce()).toBe(1);
    const delivered = await api.request('GET', '/api/v1/app/lite/msg/lite-1/endpoint');
    expect(delivered.body.data).toMatchObject([{ id: ep.id, statusText: 'success', attempts: 1 }]);
    await sender.close();
    expect(receiver.requests.map((r) => r.headers['x-lite'])).toEqual(['1', '1']);

    const list = await api.request('GET', '/api/v1/app/lite/msg?event_types=lite.event');
    expect(list.body.data.map((m: { id: string }) => m.id)).toEqual([first.body.id]);

    expect((await api.request('DELETE', '/api/v1/app/lite/msg/lite-1/content')).status).toBe(204);
    expect((await api.request('GET', '/api/v1/app/lite/msg/lite-1')).body).toMatchObject({
      payload: {},
      expungedAt: expect.any(String),
    });
  });

  it('answers errors as on PostgreSQL', async () => {
    expect((await api.request('GET', '/api/v1/app', { token: null })).status).toBe(401);
    expect((await api.request('GET', '/api/v1/app/missing')).status).toBe(404);
    expect(locs(await api.request('POST', '/api/v1/app', { body: { name: 1 } }))).toEqual(['body.name']);
    expect((await api.request('GET', '/health/ready', { token: null })).status).toBe(204);
    const appId = await createApp(api);
    await api.request('POST', '/api/v1/event-type', { body: { name: 'x', description: 'x' } });
    expect((await api.request('GET', '/api/v1/event-type')).body.data).toHaveLength(1);
    expect((await api.request('DELETE', `/api/v1/app/${appId}`)).status).toBe(204);
  });
});
