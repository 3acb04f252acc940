import { Webhook } from 'standardwebhooks';
import { type EndpointDisabledEventData, EndpointDisabledTrigger, type EndpointEnabledEventData } from 'svix';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startWorker } from '../../src/cli/commands/worker.ts';
import { ManualClock } from '../../src/clock.ts';
import { silentLogger } from '../../src/logger.ts';
import { type Receiver, startReceiver } from '../delivery/receiver.ts';
import { virtualWorker } from '../support/engine.ts';
import {
  createApp,
  createEndpoint,
  locs,
  publishMessage,
  startApi,
  type TestApi,
  testConfig,
} from './support.ts';

describe('operational events and endpoints paused by Courier', () => {
  let api: TestApi;
  let receiver: Receiver;
  let status = 410;
  beforeAll(async () => {
    api = await startApi();
    receiver = await startReceiver((_req, res) => {
      res.writeHead(status);
      res.end();
    });
  });
  afterAll(async () => {
    await receiver.close();
    await api.close();
  });

  it('lists endpoint.paused; the paused endpoint shows disabled with its reason and PATCH disabled:false resumes it', async () => {
    const empty = await api.request('GET', '/api/v1/operational-event');
    expect(empty.body).toEqual({ data: [], iterator: null, prevIterator: null, done: true });

    const { worker, sender } = virtualWorker(api.db, { clock: api.clock, pauseAfter: 2 });
    const appId = await createApp(api);
    const ep = await createEndpoint(api, appId, { url: `${receiver.url}/gone` });
    for (let i = 0; i < 3; i++) {
      await api.request('POST', `/api/v1/app/${appId}/msg`, { body: { eventType: 'e', payload: { i } } });
      await worker.runOnce();
    }
    const events = await api.request('GET', '/api/v1/operational-event');
    expect(events.status).toBe(200);
    // Each of the two dead letters announced as it was written, then the pause.
    const exhausted = () => ({
      id: expect.stringMatching(/^opev_/),
      type: 'message.attempt.exhausted',
      appId,
      endpointId: ep.id,
      data: expect.objectContaining({
        appId,
        endpointId: ep.id,
        msgId: expect.stringMatching(/^msg_/),
        lastAttempt: {
          id: expect.stringMatching(/^atmpt_/),
          responseStatusCode: 410,
          timestamp: expect.any(String),
        },
        state: 'failed',
      }),
      createdAt: expect.any(String),
    });
    expect(events.body.data).toEqual([
      expect.objectContaining({ type: 'endpoint.created', endpointId: ep.id }),
      exhausted(),
      exhausted(),
      {
        id: expect.stringMatching(/^opev_/),
        type: 'endpoint.paused',
        appId,
        endpointId: ep.id,
        data: expect.objectContaining({ failureStreak: 2, trigger: 'automatic' }),
        createdAt: expect.any(String),
      },
    ]);
    const paused = await api.request('GET', `/api/v1/app/${appId}/endpoint/${ep.id}`);
    expect(paused.body).toMatchObject({
      disabled: true,
      status: 'paused',
      disabledReason: expect.stringContaining('2'),
    });

    // The third message arrived while paused: held, then released on resume.
    status = 200;
    const resumed = await api.request('PATCH', `/api/v1/app/${appId}/endpoint/${ep.id}`, {
      body: { disabled: false },
    });
    expect(resumed.body).toMatchObject({ disabled: false, status: 'enabled' });
    api.clock.advance(1000);
    expect(await worker.runOnce()).toBe(1);
    await sender.close();

    const page = await api.request(
      'GET',
      `/api/v1/operational-event?limit=1&iterator=${events.body.data[3].id}`,
    );
    expect(page.body).toMatchObject({ data: [{ type: 'endpoint.updated' }], done: false });
    const last = await api.request('GET', `/api/v1/operational-event?iterator=${page.body.iterator}`);
    expect(last.body).toMatchObject({ data: [{ type: 'endpoint.enabled' }], done: true });
    expect(locs(await api.request('GET', '/api/v1/operational-event?iterator=bogus'))).toEqual([
      'query.iterator',
    ]);
  });

  it("records Svix's endpoint lifecycle events, and a pause or disable through the API, in the change's own transaction", async () => {
    const api = await startApi();
    try {
      const appId = await createApp(api, { uid: 'tenant-7' });
      const base = `/api/v1/app/${appId}/endpoint`;
      const ep = await createEndpoint(api, appId, { url: `${receiver.url}/a`, uid: 'main' });
      const put = await api.request('PUT', `${base}/second`, { body: { url: `${receiver.url}/b` } });
      expect(put.status).toBe(201);
      await api.request('PATCH', `${base}/${ep.id}`, { body: { description: 'renamed' } });
      expect((await api.request('POST', `${base}/${ep.id}/pause`)).body.status).toBe('paused');
      // Pausing again changes nothing and says nothing.
      expect((await api.request('POST', `${base}/${ep.id}/pause`)).body.status).toBe('paused');
      await publishMessage(api, appId);
      // A paused endpoint can be disabled: its held deliveries stay held, for a resume to release.
      const disabled = await api.request('PATCH', `${base}/${ep.id}`, { body: { disabled: true } });
      expect(disabled.body).toMatchObject({ status: 'disabled', disabled: true });
      const { rows } = await api.db.query<{ state: string }>(
        'select state from courier_deliveries where endpoint_id = $1',
        [ep.id],
      );
      expect(rows).toEqual([{ state: 'held' }]);
      expect((await api.request('POST', `${base}/${ep.id}/resume`)).body.status).toBe('enabled');
      expect((await api.request('DELETE', `${base}/${put.body.id}`)).status).toBe(204);
      expect((await api.request('DELETE', `${base}/${put.body.id}`)).status).toBe(404);
      expect((await api.request('POST', `${base}/${put.body.id}/pause`)).status).toBe(404);

      const events = (await api.request('GET', '/api/v1/operational-event')).body.data as Array<{
        type: string;
        endpointId: string;
        data: Record<string, unknown>;
      }>;
      const main = { appId, appUid: 'tenant-7', endpointId: ep.id, endpointUid: 'main' };
      const second = { appId, appUid: 'tenant-7', endpointId: put.body.id, endpointUid: 'second' };
      const paused: Record<string, unknown> = {
        ...main,
        trigger: 'manual',
        reason: 'paused through the API',
      };
      // Typed as Svix's SDK reads them: the same fields, the same trigger values.
      const svixDisabled: EndpointDisabledEventData = { ...main, trigger: EndpointDisabledTrigger.Manual };
      const svixEnabled: EndpointEnabledEventData = main;
      expect(events.map((e) => [e.type, e.data])).toEqual([
        ['endpoint.created', main],
        ['endpoint.created', second],
        ['endpoint.updated', main],
        ['endpoint.paused', paused],
        ['endpoint.updated', main],
        ['endpoint.disabled', svixDisabled],
        ['endpoint.enabled', svixEnabled],
        ['endpoint.deleted', second],
      ]);
    } finally {
      await api.close();
    }
  });

  it('sends message.attempt.exhausted and endpoint.created to the operator webhook, signed with its secret', async () => {
    const operator = await startReceiver((_req, res) => {
      res.writeHead(204);
      res.end();
    });
    // On the worker's time (the system clock), so that the message is not months old to it.
    const api = await startApi({ clock: new ManualClock(Date.now()) });
    const stop = await startWorker(
      api.db,
      testConfig({ COURIER_OPERATOR_WEBHOOK_URL: `${operator.url}/ops` }),
      silentLogger,
    );
    try {
      status = 400;
      const appId = await createApp(api);
      const ep = await createEndpoint(api, appId, {
        url: `${receiver.url}/refuses`,
        filterTypes: ['refused'],
      });
      const sent = await api.request('POST', `/api/v1/app/${appId}/msg`, {
        body: { eventType: 'refused', payload: { n: 1 } },
      });
      // The endpoint's creation too: the API records it for every worker's relay.
      for (let i = 0; i < 500 && operator.requests.length < 2; i++)
        await new Promise((r) => setTimeout(r, 20));
      expect(operator.requests).toHaveLength(2);

      const secret = await api.request('GET', '/api/v1/operational-webhook/endpoint/operator/secret');
      const verified = operator.requests.map(
        (request) =>
          new Webhook(secret.body.key).verify(
            request.body.toString(),
            request.headers as Record<string, string>,
          ) as { type: string; data: Record<string, unknown> },
      );
      verified.sort((a, b) => a.type.localeCompare(b.type));
      expect(verified).toMatchObject([
        { type: 'endpoint.created', data: { appId, endpointId: ep.id } },
        {
          type: 'message.attempt.exhausted',
          data: { appId, endpointId: ep.id, msgId: sent.body.id, state: 'failed' },
        },
      ]);
    } finally {
      await stop();
      await operator.close();
      await api.close();
    }
  });
});
