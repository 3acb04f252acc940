/**
 * GET …/endpoint/{ep}/retry-policy (a Courier extension): the policy an endpoint's deliveries
 * follow, from the installation's configuration and the two layers of overrides, checked against
 * what a worker then decides.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Receiver, startReceiver } from '../delivery/receiver.ts';
import { virtualWorker } from '../support/engine.ts';
import { createApp, createEndpoint, publishMessage, startApi, type TestApi } from './support.ts';

describe('an endpoint’s retry policy', () => {
  let api: TestApi;
  let receiver: Receiver;
  const policyOf = (app: string, endpoint: string, token?: string) =>
    api.request('GET', `/api/v1/app/${app}/endpoint/${endpoint}/retry-policy`, { token });

  beforeAll(async () => {
    api = await startApi({
      env: { COURIER_RETRY_BASE: '30s', COURIER_MAX_ATTEMPTS: '8', COURIER_RETRY_AFTER_CEILING: '2h' },
    });
    receiver = await startReceiver((_req, res) => res.writeHead(500).end());
  });
  afterAll(async () => {
    await receiver.close();
    await api.close();
  });

  it("is the installation's where nothing overrides it", async () => {
    const app = await createApp(api, { uid: 'plain' });
    await createEndpoint(api, app, { url: `${receiver.url}/plain`, uid: 'main' });
    const answer = await policyOf('plain', 'main');
    expect(answer.status, answer.text).toBe(200);
    expect(answer.body).toEqual({
      policy: {
        classifier: { mode: 'strict', overrides: {} },
        backoff: { kind: 'exponential', baseMs: 30_000, capMs: 3_600_000, jitter: 'equal' },
        retryAfter: { statuses: [429, 503], ceilingMs: 7_200_000 },
        giveUp: { maxAttempts: 8, windowMs: 259_200_000 },
      },
      application: null,
      endpoint: null,
    });
  });

  it("layers the application's overrides and the endpoint's as the worker does, and the worker follows it", async () => {
    const application = {
      classifier: { overrides: { '404': 'permanent', '500': 'permanent' } },
      giveUp: { windowMs: 3_600_000 },
      retryAfter: { statuses: [429] },
    };
    const endpoint = {
      classifier: { mode: 'lenient', overrides: { '500': 'retry' } },
      backoff: { scheduleMs: [5000, 60_000], jitter: 'none' },
    };
    const app = await createApp(api, { uid: 'layered', retryPolicy: application });
    const ep = await createEndpoint(api, app, { url: `${receiver.url}/layered`, retryPolicy: endpoint });
    const answer = await policyOf(app, ep.id);
    expect(answer.status, answer.text).toBe(200);
    expect(answer.body).toEqual({
      policy: {
        classifier: { mode: 'lenient', overrides: { '404': 'permanent', '500': 'retry' } },
        // The endpoint's backoff replaces the installation's whole: no base of 30 s beside a schedule.
        backoff: { kind: 'schedule', scheduleMs: [5000, 60_000], jitter: 'none' },
        retryAfter: { statuses: [429], ceilingMs: 7_200_000 },
        giveUp: { maxAttempts: 8, windowMs: 3_600_000 },
      },
      application,
      endpoint,
    });
    // By uid as by id.
    expect((await policyOf('layered', ep.id)).body).toEqual(answer.body);

    const engine = virtualWorker(api.db, { clock: api.clock, policy: api.config.retry });
    try {
      await publishMessage(api, app);
      await engine.worker.runOnce();
    } finally {
      await engine.sender.close();
    }
    const attempts = await api.request('GET', `/api/v1/app/${app}/attempt/endpoint/${ep.id}`);
    expect(attempts.body.data).toMatchObject([
      { responseStatusCode: 500, decision: 'retry', nextDelayMs: 5000 },
    ]);
  });

  it('answers 404 for an endpoint or application that is not there, and an application token reads its own', async () => {
    const app = await createApp(api, { uid: 'owned' });
    const ep = await createEndpoint(api, app, { url: `${receiver.url}/owned` });
    const missing = await policyOf(app, 'ep_2bTg7Hx9KzXq1vZmN3pQ4rS5tUw');
    expect(missing.status).toBe(404);
    expect(missing.body).toMatchObject({ code: 'not_found', detail: expect.stringContaining('not found') });
    expect((await policyOf('nowhere', ep.id)).status).toBe(404);

    const access = await api.request('POST', `/api/v1/auth/app-portal-access/${app}`, {
      body: { capabilities: ['ViewBase'] },
    });
    expect(access.status, access.text).toBe(200);
    const token = access.body.token as string;
    expect((await policyOf(app, ep.id, token)).status).toBe(200);
    const other = await createApp(api);
    const theirs = await createEndpoint(api, other, { url: `${receiver.url}/theirs` });
    expect((await policyOf(other, theirs.id, token)).status).toBe(403);
  });
});
