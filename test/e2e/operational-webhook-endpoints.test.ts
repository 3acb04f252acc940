/**
 * Svix's operational webhook endpoints, driven by the official SDK: the operator application's
 * endpoints, which every worker's relay sends operational events to, signed like any webhook.
 */
import { Webhook } from 'standardwebhooks';
import { ApiException, Svix } from 'svix';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.ts';
import { OPERATOR_APP_UID } from '../../src/dispatch/operator-uids.ts';
import { OperatorRelay } from '../../src/dispatch/operator-webhook.ts';
import { Wakeups } from '../../src/dispatch/wakeups.ts';
import { silentLogger } from '../../src/logger.ts';
import { type Receiver, startReceiver } from '../delivery/receiver.ts';
import { virtualWorker } from '../support/engine.ts';
import { startApi, type TestApi, TOKEN } from './support.ts';

describe('operational webhook endpoints', () => {
  let api: TestApi;
  let receiver: Receiver;
  let svix: Svix;
  let engine: ReturnType<typeof virtualWorker>;
  let relay: OperatorRelay;

  beforeEach(async () => {
    // Near real time: the verifier checks signature timestamps against its own clock.
    const clock = new ManualClock(Date.now());
    api = await startApi({ clock });
    receiver = await startReceiver((_req, res) => {
      res.writeHead(204);
      res.end();
    });
    relay = new OperatorRelay(api.db, clock, silentLogger);
    engine = virtualWorker(api.db, { clock, operatorRelay: relay });
    svix = new Svix(TOKEN, { serverUrl: api.url });
  });
  afterEach(async () => {
    await engine.sender.close();
    await receiver.close();
    await api.close();
  });

  const status = async (promise: Promise<unknown>) => {
    try {
      await promise;
    } catch (error) {
      if (error instanceof ApiException) return { code: error.code, body: error.body as { code: string } };
      throw error;
    }
    throw new Error('expected an API error');
  };
  /** What the relay and one worker pass send now: the received bodies by path. */
  const sendOperationalEvents = async () => {
    await relay.run();
    await engine.worker.runOnce();
    return receiver.requests.map((r) => ({ path: r.url, body: JSON.parse(r.body.toString('utf8')) }));
  };

  it("wake every worker's relay with the commit of an event the API records", async () => {
    let notices = 0;
    const wakeups = new Wakeups(api.db, new ManualClock(Date.now()), silentLogger, 30_000, () => notices++);
    await wakeups.start();
    try {
      await svix.application.create({ name: 'Acme', uid: 'acme' });
      await svix.endpoint.create('acme', { url: 'https://example.com/hook' });
      for (let i = 0; i < 200 && notices === 0; i++) await new Promise((r) => setTimeout(r, 10));
      expect(notices).toBe(1);
    } finally {
      await wakeups.stop();
    }
  });

  it('are none before the first is made, and one unknown is a 404', async () => {
    expect(await svix.operationalWebhookEndpoint.list()).toMatchObject({ data: [], done: true });
    const missing = await status(svix.operationalWebhookEndpoint.get('ep_01HZX1ZQ9R6Y5W2V3T4S5R6Q7P'));
    expect(missing).toMatchObject({ code: 404, body: { code: 'not_found' } });
    expect(await status(svix.operationalWebhookEndpoint.delete('nothing-here'))).toMatchObject({ code: 404 });
    // Looking made nothing: the operator application is made with the first endpoint.
    expect((await api.request('GET', `/api/v1/app/${OPERATOR_APP_UID}`)).status).toBe(404);
  });

  it('are created, read, listed, updated, re-keyed, given headers and deleted through the SDK', async () => {
    const made = await svix.operationalWebhookEndpoint.create({
      url: `${receiver.url}/ops`,
      uid: 'ops',
      description: 'on-call',
      filterTypes: ['message.attempt.exhausted', 'endpoint.disabled'],
      metadata: { team: 'sre' },
      rateLimit: 5,
    });
    expect(made).toMatchObject({
      id: expect.stringMatching(/^ep_/),
      uid: 'ops',
      url: `${receiver.url}/ops`,
      description: 'on-call',
      disabled: false,
      filterTypes: ['message.attempt.exhausted', 'endpoint.disabled'],
      metadata: { team: 'sre' },
      rateLimit: 5,
    });
    expect(await svix.operationalWebhookEndpoint.get('ops')).toEqual(made);
    expect((await svix.operationalWebhookEndpoint.list()).data.map((e) => e.id)).toEqual([made.id]);
    // Svix's answer (and Courier's status), not an application endpoint's settings.
    const raw = await api.request('GET', `/api/v1/operational-webhook/endpoint/${made.id}`);
    expect(Object.keys(raw.body).sort()).toEqual(
      [
        'createdAt',
        'description',
        'disabled',
        'disabledReason',
        'filterTypes',
        'status',
        'id',
        'metadata',
        'publicOnly',
        'rateLimit',
        'throttleRate',
        'uid',
        'updatedAt',
        'url',
      ].sort(),
    );

    // Public-only as the admin token says (an earlier release's worker may make one so), kept by a PUT
    // of the same URL without it; a literal private address refused with it.
    const put = (body: Record<string, unknown>) =>
      api.request('PUT', `/api/v1/operational-webhook/endpoint/${made.id}`, {
        body: { url: 'https://ops.example/in', uid: 'ops', ...body },
      });
    expect(raw.body.publicOnly).toBe(false);
    expect((await put({ publicOnly: true })).body.publicOnly).toBe(true);
    expect((await put({ description: 'on-call' })).body.publicOnly).toBe(true);
    const literal = await put({ url: `${receiver.url}/ops`, publicOnly: true });
    expect(literal.status).toBe(422);
    expect((await put({ publicOnly: false })).body.publicOnly).toBe(false);

    const updated = await svix.operationalWebhookEndpoint.update('ops', {
      url: `${receiver.url}/ops2`,
      filterTypes: null,
    });
    // Absent fields return to their defaults; named by its uid, it keeps it.
    expect(updated).toMatchObject({ id: made.id, uid: 'ops', url: `${receiver.url}/ops2`, description: '' });
    expect(updated.filterTypes ?? null).toBeNull();

    const first = await svix.operationalWebhookEndpoint.getSecret(made.id);
    expect(first.key).toMatch(/^whsec_/);
    const key = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
    await svix.operationalWebhookEndpoint.rotateSecret(made.id, { key });
    expect((await svix.operationalWebhookEndpoint.getSecret('ops')).key).toBe(key);

    await svix.operationalWebhookEndpoint.updateHeaders('ops', {
      headers: { 'x-team': 'sre', authorization: 'Bearer s3cret' },
    });
    expect(await svix.operationalWebhookEndpoint.getHeaders(made.id)).toEqual({
      headers: { 'x-team': 'sre' },
      sensitive: ['authorization'],
    });

    await svix.operationalWebhookEndpoint.delete('ops');
    expect(await status(svix.operationalWebhookEndpoint.get(made.id))).toMatchObject({ code: 404 });
    expect((await svix.operationalWebhookEndpoint.list()).data).toEqual([]);
  });

  it('refuse what they could not send, with field errors', async () => {
    const refused = async (body: Record<string, unknown>) =>
      (await api.request('POST', '/api/v1/operational-webhook/endpoint', { body })).body;
    // Not an operational event: it would never be sent.
    expect(await refused({ url: `${receiver.url}/ops`, filterTypes: ['invoice.paid'] })).toMatchObject({
      code: 'validation',
      detail: [expect.objectContaining({ loc: ['body', 'filterTypes', '0'] })],
    });
    expect(await refused({ url: 'ftp://example.com/ops' })).toMatchObject({
      detail: [expect.objectContaining({ loc: ['body', 'url'] })],
    });
    expect(await refused({ url: `${receiver.url}/ops`, secret: 'not-a-secret' })).toMatchObject({
      detail: [expect.objectContaining({ loc: ['body', 'secret'] })],
    });
    // Refused before anything was made: no operator application either.
    expect((await api.request('GET', `/api/v1/app/${OPERATOR_APP_UID}`)).status).toBe(404);
    const put = await api.request(
      'PUT',
      '/api/v1/operational-webhook/endpoint/ep_01HZX1ZQ9R6Y5W2V3T4S5R6Q7P',
      {
        body: { url: `${receiver.url}/ops` },
      },
    );
    expect(put.status).toBe(404);
    expect((await api.request('GET', `/api/v1/app/${OPERATOR_APP_UID}`)).status).toBe(404);

    await svix.operationalWebhookEndpoint.create({ url: `${receiver.url}/ops`, uid: 'ops' });
    expect(await refused({ url: `${receiver.url}/other`, uid: 'ops' })).toMatchObject({ code: 'conflict' });
  });

  it("ignore an application endpoint's fields, which would narrow or break what they receive", async () => {
    const body = {
      url: `${receiver.url}/ops`,
      uid: 'ops',
      eventTypes: ['invoice.paid'],
      channels: ['billing'],
      maxInFlight: 0,
      version: 'x',
      headers: { 'x-a': 'b' },
    };
    const made = await api.request('POST', '/api/v1/operational-webhook/endpoint', { body });
    expect(made.status).toBe(201);
    const put = await api.request('PUT', '/api/v1/operational-webhook/endpoint/ops', { body });
    expect(put.status).toBe(200);
    const stored = await api.request('GET', `/api/v1/app/${OPERATOR_APP_UID}/endpoint/ops`);
    expect(stored.body).toMatchObject({ filterTypes: null, channels: null, version: 1, maxInFlight: 10 });
    expect((await svix.operationalWebhookEndpoint.getHeaders('ops')).headers).toEqual({});
  });

  it('receive the operational events their filterTypes name, signed with their own secrets', async () => {
    const all = await svix.operationalWebhookEndpoint.create({ url: `${receiver.url}/all` });
    const created = await svix.operationalWebhookEndpoint.create({
      url: `${receiver.url}/created`,
      filterTypes: ['endpoint.created'],
    });
    // Their own creation is not announced to them: the operational endpoints are not customers'.
    expect(await sendOperationalEvents()).toEqual([]);

    const customer = await svix.application.create({ name: 'Acme', uid: 'acme' });
    const endpoint = await svix.endpoint.create('acme', { url: 'https://example.com/hook', uid: 'main' });
    await svix.endpoint.update('acme', 'main', { url: 'https://example.com/hook2' });
    const received = await sendOperationalEvents();
    const data = { appId: customer.id, appUid: 'acme', endpointId: endpoint.id, endpointUid: 'main' };
    const body = (type: string) => ({ type, timestamp: expect.any(String), data });
    expect(received.filter((r) => r.path === '/all').map((r) => r.body)).toEqual([
      body('endpoint.created'),
      body('endpoint.updated'),
    ]);
    expect(received.filter((r) => r.path === '/created').map((r) => r.body)).toEqual([
      body('endpoint.created'),
    ]);

    const secrets = {
      '/all': (await svix.operationalWebhookEndpoint.getSecret(all.id)).key,
      '/created': (await svix.operationalWebhookEndpoint.getSecret(created.id)).key,
    };
    for (const request of receiver.requests) {
      const own = request.url as keyof typeof secrets;
      const other = own === '/all' ? '/created' : '/all';
      const verify = (secret: string) => () =>
        new Webhook(secret).verify(request.body.toString('utf8'), request.headers as Record<string, string>);
      expect(verify(secrets[own])).not.toThrow();
      expect(verify(secrets[other])).toThrow();
    }
  });

  it('receive background_task.finished, and nothing their filterTypes or a disabled flag leave out', async () => {
    await svix.operationalWebhookEndpoint.create({
      url: `${receiver.url}/tasks`,
      filterTypes: ['background_task.finished'],
    });
    await svix.operationalWebhookEndpoint.create({ url: `${receiver.url}/off`, disabled: true });
    const customer = await svix.application.create({ name: 'Acme', uid: 'acme' });
    const endpoint = await svix.endpoint.create('acme', { url: 'https://example.com/hook', uid: 'main' });
    const task = await svix.endpoint.recover('acme', 'main', { since: new Date(Date.now() - 3_600_000) });
    const received = await sendOperationalEvents();
    expect(received).toEqual([
      {
        path: '/tasks',
        body: {
          type: 'background_task.finished',
          timestamp: expect.any(String),
          data: {
            taskId: task.id,
            status: 'finished',
            task: 'endpoint.recover',
            data: { appId: customer.id, endpointId: endpoint.id, replayed: 0 },
          },
        },
      },
    ]);
    // endpoint.created was taken by no endpoint: not stored as a message of the operator application.
    const { rows } = await api.db.query<{ event_type: string }>(
      `select m.event_type from courier_messages m join courier_applications a on a.id = m.app_id
        where a.uid = $1`,
      [OPERATOR_APP_UID],
    );
    expect(rows).toEqual([{ event_type: 'background_task.finished' }]);
  });
});
