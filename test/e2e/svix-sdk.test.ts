/**
 * The official Svix SDK (svix@1.x, CommonJS) drives a running Courier end to end: the independent
 * check that Courier speaks Svix's API. Deliveries are verified with the standardwebhooks package.
 */
import { Webhook } from 'standardwebhooks';
import {
  ApiException,
  BackgroundTaskStatus,
  BackgroundTaskType,
  MessageAttemptTriggerType,
  MessageStatus,
  messageInRaw,
  Svix,
} from 'svix';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.ts';
import { type Receiver, startReceiver } from '../delivery/receiver.ts';
import { virtualWorker } from '../support/engine.ts';
import { startApi, type TestApi, TOKEN } from './support.ts';

describe('the official Svix SDK against Courier', () => {
  let api: TestApi;
  let receiver: Receiver;
  let svix: Svix;
  let engine: ReturnType<typeof virtualWorker>;

  beforeAll(async () => {
    // Near real time: receivers check signature timestamps against their own clock (5 minutes of tolerance).
    const clock = new ManualClock(Date.now());
    api = await startApi({ clock });
    receiver = await startReceiver((_req, res) => {
      res.writeHead(200);
      res.end('ok');
    });
    engine = virtualWorker(api.db, { clock });
    svix = new Svix(TOKEN, { serverUrl: api.url });
  });
  afterAll(async () => {
    await engine.sender.close();
    await receiver.close();
    await api.close();
  });

  const verifies = (secret: string, index: number): boolean => {
    const request = receiver.requests[index]!;
    try {
      new Webhook(secret).verify(request.body.toString('utf8'), request.headers as Record<string, string>);
      return true;
    } catch {
      return false;
    }
  };
  const apiError = async (
    promise: Promise<unknown>,
  ): Promise<ApiException<{ code: string; detail: unknown }>> => {
    try {
      await promise;
    } catch (error) {
      if (error instanceof ApiException) return error;
      throw error;
    }
    throw new Error('expected an ApiException');
  };

  it('runs the whole flow: app, endpoint, message, delivery, attempts, resend, rotation, headers', async () => {
    await svix.health.get();
    const app = await svix.application.create({ name: 'SDK app', uid: 'sdk-app', metadata: { env: 'test' } });
    expect(app).toMatchObject({ name: 'SDK app', uid: 'sdk-app', metadata: { env: 'test' } });
    expect(app.createdAt).toBeInstanceOf(Date);
    expect((await svix.application.getOrCreate({ name: 'ignored', uid: 'sdk-app' })).id).toBe(app.id);
    expect((await svix.application.get('sdk-app')).id).toBe(app.id);

    const endpoint = await svix.endpoint.create(app.id, {
      url: `${receiver.url}/hook`,
      description: 'loopback',
      filterTypes: ['invoice.paid', 'invoice.failed'],
      version: 1,
      uid: 'sdk-endpoint',
    });
    expect(endpoint).toMatchObject({
      url: `${receiver.url}/hook`,
      filterTypes: ['invoice.paid', 'invoice.failed'],
      version: 1,
    });
    const { key: secret } = await svix.endpoint.getSecret(app.id, endpoint.id);

    await svix.endpoint.updateHeaders(app.id, endpoint.id, {
      headers: { 'X-Tenant': 'acme', 'X-Drop': '1' },
    });
    await svix.endpoint.patchHeaders(app.id, endpoint.id, {
      headers: { 'X-Extra': 'yes' },
      deleteHeaders: ['X-Drop'],
    });
    expect((await svix.endpoint.getHeaders(app.id, endpoint.id)).headers).toEqual({
      'X-Tenant': 'acme',
      'X-Extra': 'yes',
    });

    const payload = { invoice: 'in_123', amount: 4200, lines: [{ sku: 'a', qty: 1 }] };
    const message = await svix.message.create(app.id, {
      eventType: 'invoice.paid',
      payload,
      eventId: 'evt_sdk_1',
    });
    expect(message).toMatchObject({ eventType: 'invoice.paid', eventId: 'evt_sdk_1', payload });
    await svix.message.create(app.id, { eventType: 'user.created', payload: {} }); // filtered out

    expect(await engine.worker.runOnce()).toBe(1);
    expect(receiver.requests).toHaveLength(1);
    const delivered = receiver.requests[0]!;
    expect(JSON.parse(delivered.body.toString())).toEqual(payload);
    expect(delivered.headers['webhook-id']).toBe(message.id);
    expect(delivered.headers['x-tenant']).toBe('acme');
    expect(delivered.headers['x-extra']).toBe('yes');
    expect(verifies(secret, 0)).toBe(true);

    const byEndpoint = await svix.messageAttempt.listByEndpoint(app.id, endpoint.id);
    expect(byEndpoint.data).toHaveLength(1);
    const attempt = byEndpoint.data[0]!;
    expect(attempt).toMatchObject({
      msgId: message.id,
      endpointId: endpoint.id,
      status: MessageStatus.Success,
      responseStatusCode: 200,
      triggerType: MessageAttemptTriggerType.Scheduled,
    });
    expect(attempt.timestamp).toBeInstanceOf(Date);
    expect(
      (await svix.messageAttempt.listByMsg(app.id, 'evt_sdk_1', { status: MessageStatus.Success })).data,
    ).toEqual([attempt]);
    expect(await svix.messageAttempt.get(app.id, message.id, attempt.id)).toEqual(attempt);

    // Resend: delivered again, as a manual attempt.
    await svix.messageAttempt.resend(app.id, message.id, endpoint.id);
    expect(await engine.worker.runOnce()).toBe(1);
    const afterResend = await svix.messageAttempt.listByMsg(app.id, message.id);
    expect(afterResend.data.map((a) => a.triggerType)).toEqual([
      MessageAttemptTriggerType.Manual,
      MessageAttemptTriggerType.Scheduled,
    ]);
    expect(verifies(secret, 1)).toBe(true);

    const destinations = await svix.messageAttempt.listAttemptedDestinations(app.id, message.id);
    expect(destinations.done).toBe(true);
    expect(destinations.data).toHaveLength(1);
    expect(destinations.data[0]).toMatchObject({
      id: endpoint.id,
      url: endpoint.url,
      status: MessageStatus.Success,
      statusText: 'success',
      nextAttempt: null,
    });
    expect(destinations.data[0]!.createdAt).toBeInstanceOf(Date);

    // Rotation: during the grace period both secrets verify; after it only the new one.
    await svix.endpoint.rotateSecret(app.id, endpoint.id, { gracePeriodSeconds: 60 });
    const { key: rotated } = await svix.endpoint.getSecret(app.id, endpoint.id);
    expect(rotated).not.toBe(secret);
    await svix.message.create(app.id, { eventType: 'invoice.failed', payload: { n: 2 } });
    await engine.worker.runOnce();
    expect([verifies(rotated, 2), verifies(secret, 2)]).toEqual([true, true]);
    api.clock.advance(61_000);
    await svix.message.create(app.id, { eventType: 'invoice.failed', payload: { n: 3 } });
    await engine.worker.runOnce();
    expect([verifies(rotated, 3), verifies(secret, 3)]).toEqual([true, false]);
    // Every delivery verified with the secret(s) active when it was signed.
    expect(receiver.requests).toHaveLength(4);

    const recovered = await svix.endpoint.recover(app.id, endpoint.id, {
      since: new Date(api.clock.now() - 3600_000),
    });
    expect(recovered).toMatchObject({ id: expect.stringMatching(/^qtask_/), status: 'finished' });
    expect(recovered.updatedAt.getTime()).toBe(api.clock.now());

    const updated = await svix.endpoint.update(app.id, endpoint.id, {
      url: `${receiver.url}/v2`,
      description: 'moved',
    });
    expect(updated).toMatchObject({ url: `${receiver.url}/v2`, description: 'moved', filterTypes: null });
    expect(updated.uid).toBeNull(); // PUT replaces, as in Svix: the uid was not given again
    const patched = await svix.endpoint.patch(app.id, endpoint.id, { disabled: true, uid: 'sdk-endpoint' });
    expect(patched.disabled).toBe(true);
    await svix.endpoint.delete(app.id, 'sdk-endpoint');
    expect((await apiError(svix.endpoint.get(app.id, endpoint.id))).code).toBe(404);

    // A message sent with content it should not have carried: its payload deleted.
    await svix.message.expungeContent(app.id, message.id);
    expect((await svix.message.get(app.id, message.id)).payload).toEqual({});
  });

  it('replays to an endpoint what it missed while disabled (replayMissing), signed, once', async () => {
    const app = await svix.application.create({ name: 'Replay' });
    const endpoint = await svix.endpoint.create(app.id, {
      url: `${receiver.url}/missed`,
      filterTypes: ['a'],
    });
    const { key: secret } = await svix.endpoint.getSecret(app.id, endpoint.id);
    const since = new Date(api.clock.now());
    const sentTo = () =>
      receiver.requests.filter((r) => r.url === '/missed').map((r) => r.headers['webhook-id']);
    const got = await svix.message.create(app.id, { eventType: 'a', payload: { n: 1 } });
    await engine.worker.runOnce();
    await svix.endpoint.patch(app.id, endpoint.id, { disabled: true });
    const missed = [
      await svix.message.create(app.id, { eventType: 'a', payload: { n: 2 } }),
      await svix.message.create(app.id, { eventType: 'b', payload: { n: 3 } }), // not a type it takes
      await svix.message.create(app.id, { eventType: 'a', payload: { n: 4 } }),
    ];
    await svix.endpoint.patch(app.id, endpoint.id, { disabled: false });
    await engine.worker.runOnce();
    expect(sentTo()).toEqual([got.id]);

    expect(await svix.message.precheck(app.id, { eventType: 'a' })).toEqual({ active: true });
    expect(await svix.message.precheck(app.id, { eventType: 'b' })).toEqual({ active: false });
    const task = await svix.endpoint.replayMissing(app.id, endpoint.id, { since });
    expect(task).toMatchObject({
      status: BackgroundTaskStatus.Finished,
      task: BackgroundTaskType.EndpointReplay,
    });
    await engine.worker.runOnce();
    expect(sentTo()).toEqual([got.id, missed[0]!.id, missed[2]!.id]);
    const replayed = receiver.requests.filter((r) => r.url === '/missed').slice(1);
    for (const r of replayed) {
      expect(
        new Webhook(secret).verify(r.body.toString('utf8'), r.headers as Record<string, string>),
      ).toBeTruthy();
    }
    const attempts = await svix.messageAttempt.listByEndpoint(app.id, endpoint.id);
    expect(attempts.data.map((a) => a.triggerType).sort()).toEqual(
      [
        MessageAttemptTriggerType.Scheduled,
        MessageAttemptTriggerType.Manual,
        MessageAttemptTriggerType.Manual,
      ].sort(),
    );
    // What it got is not sent again.
    api.clock.advance(1);
    const again = await svix.endpoint.replayMissing(app.id, endpoint.id, { since });
    await engine.worker.runOnce();
    expect(sentTo()).toHaveLength(3);

    // The tasks are kept: read back as Svix's SDK follows a task, newest first, filtered.
    const target = { appId: app.id, endpointId: endpoint.id };
    expect(await svix.backgroundTask.get(task.id)).toEqual({
      id: task.id,
      status: BackgroundTaskStatus.Finished,
      task: BackgroundTaskType.EndpointReplay,
      data: { ...target, replayed: 2 },
      updatedAt: task.updatedAt,
    });
    const listed = await svix.backgroundTask.list({ task: BackgroundTaskType.EndpointReplay, limit: 1 });
    expect(listed.data.map((t) => [t.id, t.data])).toEqual([[again.id, { ...target, replayed: 0 }]]);
    const next = await svix.backgroundTask.list({
      task: BackgroundTaskType.EndpointReplay,
      limit: 1,
      iterator: listed.iterator,
    });
    expect(next.data.map((t) => t.id)).toEqual([task.id]);
    const [recovers, running] = await Promise.all([
      svix.backgroundTask.list({ task: BackgroundTaskType.EndpointRecover }),
      svix.backgroundTask.list({ status: BackgroundTaskStatus.Running }),
    ]);
    // The first test's recover, and only recovers.
    expect(recovers.data.length).toBeGreaterThan(0);
    expect(recovers.data.every((t) => t.task === BackgroundTaskType.EndpointRecover)).toBe(true);
    expect(recovers.data.map((t) => t.id)).not.toContain(task.id);
    expect(running.data).toEqual([]);
    expect([listed.done, next.prevIterator]).toEqual([false, `-${task.id}`]);
    // A type of Svix's that Courier does not run matches none; a purge is kept like the rest.
    expect((await svix.backgroundTask.list({ task: BackgroundTaskType.ApplicationStats })).data).toEqual([]);
    const purge = await svix.message.expungeAllContents(app.id);
    expect(await svix.backgroundTask.get(purge.id)).toMatchObject({
      status: BackgroundTaskStatus.Finished,
      task: BackgroundTaskType.ApplicationPurgeContent,
      data: { appId: app.id },
    });
    expect((await apiError(svix.backgroundTask.get('qtask_unknown'))).code).toBe(404);
  });

  it('paginates applications, endpoints and messages through iterators', async () => {
    const app = await svix.application.create({ name: 'pages' });
    for (let i = 0; i < 7; i++) await svix.message.create(app.id, { eventType: 'page.test', payload: { i } });
    for (let i = 0; i < 5; i++) await svix.endpoint.create(app.id, { url: `${receiver.url}/p${i}` });

    const walk = async <T extends { id: string }>(
      list: (iterator: string | undefined) => Promise<{ data: T[]; iterator: string | null; done: boolean }>,
    ) => {
      const ids: string[] = [];
      let iterator: string | undefined;
      for (let pages = 0; pages < 20; pages++) {
        const page = await list(iterator);
        ids.push(...page.data.map((x) => x.id));
        if (page.done) return ids;
        iterator = page.iterator ?? undefined;
      }
      throw new Error('pagination did not end');
    };
    const messages = await walk((iterator) => svix.message.list(app.id, { limit: 3, iterator }));
    expect(messages).toHaveLength(7);
    expect(new Set(messages).size).toBe(7);
    expect([...messages].sort().reverse()).toEqual(messages); // newest first

    const endpoints = await walk((iterator) => svix.endpoint.list(app.id, { limit: 2, iterator }));
    expect(endpoints).toHaveLength(5);
    expect([...endpoints].sort().reverse()).toEqual(endpoints); // newest first, as Svix
    const apps = await walk((iterator) => svix.application.list({ limit: 1, iterator }));
    expect(apps).toContain(app.id);
    expect(new Set(apps).size).toBe(apps.length);
  });

  it('manages event types', async () => {
    const created = await svix.eventType.create({
      name: 'order.shipped',
      description: 'Shipped',
      schemas: { '1': { type: 'object' } },
    });
    expect(created).toMatchObject({ name: 'order.shipped', deprecated: false, archived: false });
    expect((await svix.eventType.get('order.shipped')).schemas).toEqual({ '1': { type: 'object' } });
    expect((await svix.eventType.update('order.shipped', { description: 'Sent' })).description).toBe('Sent');
    expect((await svix.eventType.patch('order.shipped', { deprecated: true })).deprecated).toBe(true);
    expect((await svix.eventType.list({ withContent: true })).data.map((e) => e.name)).toContain(
      'order.shipped',
    );
    await svix.eventType.delete('order.shipped');
    expect((await svix.eventType.get('order.shipped')).archived).toBe(true);
    expect((await svix.eventType.list()).data.map((e) => e.name)).not.toContain('order.shipped');
  });

  it('makes the application a message names when it is missing, and refuses a raw payload it cannot send', async () => {
    const first = await svix.message.create('made-by-message', {
      eventType: 'user.created',
      payload: { n: 1 },
      application: { name: 'Made by a message', metadata: { via: 'message' } },
    });
    const made = await svix.application.get('made-by-message');
    expect(made).toMatchObject({
      uid: 'made-by-message',
      name: 'Made by a message',
      metadata: { via: 'message' },
    });
    // There now: the field is ignored, the same application used.
    const second = await svix.message.create('made-by-message', {
      eventType: 'user.created',
      payload: { n: 2 },
      application: { name: 'Another name' },
    });
    expect((await svix.application.get('made-by-message')).name).toBe('Made by a message');
    const listed = await svix.message.list('made-by-message');
    expect(listed.data.map((m) => m.id).sort()).toEqual([first.id, second.id].sort());
    // A body refused otherwise makes no application.
    const refused = await apiError(
      svix.message.create('not-made', {
        eventType: 'e',
        payload: {},
        payloadRetentionPeriod: 5,
        payloadRetentionHours: 5,
        application: { name: 'Not made' },
      }),
    );
    expect(refused.code).toBe(422);
    expect((await apiError(svix.application.get('not-made'))).code).toBe(404);
    // Without the field, a missing application is a 404, as before.
    expect((await apiError(svix.message.create('nowhere', { eventType: 'e', payload: {} }))).code).toBe(404);

    const raw = await apiError(
      svix.message.create(
        'made-by-message',
        messageInRaw('user.created', '<user id="1"/>', 'application/xml'),
      ),
    );
    expect(raw.code).toBe(422);
    expect(JSON.stringify(raw.body)).toMatch(/raw \(non-JSON\) payloads are not supported/);
  });

  it('surfaces errors as ApiException with JSON bodies', async () => {
    const missing = await apiError(svix.application.get('no-such-app'));
    expect(missing.code).toBe(404);
    expect(missing.body).toMatchObject({ code: 'not_found' });

    const app = await svix.application.create({ name: 'errors' });
    await svix.message.create(app.id, { eventType: 'a', payload: {}, eventId: 'once' });
    const duplicate = await apiError(
      svix.message.create(app.id, { eventType: 'a', payload: {}, eventId: 'once' }),
    );
    expect(duplicate.code).toBe(409);
    expect(duplicate.body.code).toBe('conflict');

    const invalid = await apiError(svix.endpoint.create(app.id, { url: 'ftp://nowhere' }));
    expect(invalid.code).toBe(422);
    expect(invalid.body.detail).toEqual([expect.objectContaining({ loc: ['body', 'url'] })]);

    const unauthorized = await apiError(new Svix('wrong-token', { serverUrl: api.url }).application.list());
    expect(unauthorized.code).toBe(401);
  });

  it("survives the SDK's retry after a lost response: the idempotency key makes it one message", async () => {
    const app = await svix.application.create({ name: 'retries' });
    let dropped = 0;
    // The server handles the first POST, but its answer is replaced by a 502: the SDK retries with the same key.
    const lossy: typeof fetch = async (input, init) => {
      const response = await fetch(input, init);
      if (init?.method === 'POST' && new URL(String(input)).pathname.endsWith('/msg') && dropped === 0) {
        dropped++;
        return new Response('bad gateway', { status: 502 });
      }
      return response;
    };
    const flaky = new Svix(TOKEN, { serverUrl: api.url, fetch: lossy, retryScheduleInMs: [10, 20] });
    const message = await flaky.message.create(app.id, { eventType: 'retry.me', payload: { once: true } });
    expect(dropped).toBe(1);
    const all = await svix.message.list(app.id);
    expect(all.data.map((m) => m.id)).toEqual([message.id]);
  });
});
