import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { claim } from '../../src/store/queries/claim.ts';
import { closedPort, type Receiver, startReceiver } from '../delivery/receiver.ts';
import { virtualWorker } from '../support/engine.ts';
import { createApp, createEndpoint, locs, publishMessage, startApi, type TestApi } from './support.ts';

describe('attempts, attempted destinations and resend', () => {
  let api: TestApi;
  let receiver: Receiver;
  let engine: ReturnType<typeof virtualWorker>;
  let appId: string;
  beforeAll(async () => {
    api = await startApi();
    receiver = await startReceiver((req, res) => {
      const status = req.url?.startsWith('/fail') ? 500 : req.url?.startsWith('/gone') ? 410 : 200;
      res.writeHead(status);
      res.end(status === 500 ? 'broken' : status === 410 ? 'gone' : 'thanks');
    });
  });
  afterAll(async () => {
    await receiver.close();
    await api.close();
  });
  beforeEach(async () => {
    engine = virtualWorker(api.db, { clock: api.clock });
    appId = await createApp(api);
  });
  afterEach(() => engine.sender.close());

  const publish = (body: Record<string, unknown> = {}) => publishMessage(api, appId, body);
  const attemptsOf = async (kind: 'endpoint' | 'msg', id: string, query = '') => {
    const res = await api.request('GET', `/api/v1/app/${appId}/attempt/${kind}/${id}${query}`);
    expect(res.status, res.text).toBe(200);
    return res.body.data as Record<string, unknown>[];
  };
  const delivery = async (msgId: string, epId: string) =>
    (
      await api.db.query<{ state: string; attempts: number; trigger: number; next_attempt_at: Date }>(
        'select state, attempts, trigger, next_attempt_at from courier_delivery_states where message_id = $1 and endpoint_id = $2',
        [msgId, epId],
      )
    ).rows[0];

  it('lists attempts by endpoint and by message, in the Svix shape with Courier extensions', async () => {
    const ok = await createEndpoint(api, appId, { url: `${receiver.url}/ok` });
    const bad = await createEndpoint(api, appId, { url: `${receiver.url}/fail` });
    const msgId = await publish({ eventId: 'attempted' });
    expect(await engine.worker.runOnce()).toBe(2);

    const [success] = await attemptsOf('endpoint', ok.id);
    expect(success).toEqual({
      id: expect.stringMatching(/^atmpt_[0-9A-Z]{26}$/),
      msgId,
      endpointId: ok.id,
      url: `${receiver.url}/ok`,
      response: 'thanks',
      responseStatusCode: 200,
      responseDurationMs: expect.any(Number),
      status: 0,
      statusText: 'success',
      triggerType: 0,
      timestamp: expect.any(String),
      attemptNumber: 1,
      failureKind: null,
      decision: 'delivered',
      nextDelayMs: null,
      reason: null,
      detail: expect.any(String),
      responseHeaders: null,
    });
    const [failure] = await attemptsOf('endpoint', bad.id);
    expect(failure).toMatchObject({
      status: 2,
      statusText: 'fail',
      responseStatusCode: 500,
      response: 'broken',
      decision: 'retry',
      responseHeaders: expect.objectContaining({ date: expect.any(String), connection: 'keep-alive' }),
    });
    expect(failure!.nextDelayMs).toBeGreaterThan(0);

    expect(await attemptsOf('msg', msgId)).toHaveLength(2);
    expect(await attemptsOf('msg', 'attempted', '?status=0')).toEqual([success]);
    expect(await attemptsOf('msg', msgId, '?status=2')).toEqual([failure]);
    expect(await attemptsOf('msg', msgId, '?status=1')).toEqual([]);
    expect(await attemptsOf('msg', msgId, '?status_code_class=500')).toEqual([failure]);
    expect(await attemptsOf('msg', msgId, '?status_code_class=200')).toEqual([success]);
    expect(await attemptsOf('msg', msgId, '?status_code_class=0')).toEqual([]);
    expect(await attemptsOf('msg', msgId, `?endpoint_id=${bad.id}`)).toEqual([failure]);
    expect(await attemptsOf('endpoint', ok.id, '?event_types=other')).toEqual([]);
    const withMsg = await attemptsOf(
      'endpoint',
      ok.id,
      '?event_types=e&with_msg=true&expanded_statuses=true',
    );
    expect(withMsg).toEqual([{ ...success, msg: expect.objectContaining({ id: msgId, eventType: 'e' }) }]);
    expect(
      (await attemptsOf('msg', msgId, '?with_msg=true')).map((a) => (a.msg as { id: string }).id),
    ).toEqual([msgId, msgId]);
    expect((await attemptsOf('msg', msgId))[0]).not.toHaveProperty('msg');
    const bare = await attemptsOf('msg', msgId, '?with_msg=true&with_content=false');
    expect(bare.map((a) => (a.msg as { payload: unknown }).payload)).toEqual([{}, {}]);

    const one = await api.request('GET', `/api/v1/app/${appId}/msg/${msgId}/attempt/${success!.id}`);
    expect(one.body).toEqual(success);
    expect(
      (await api.request('GET', `/api/v1/app/${appId}/msg/${msgId}/attempt/atmpt_01KDWPVNG0Z2T6P6PJXKZK51B0`))
        .status,
    ).toBe(404);
    expect(locs(await api.request('GET', `/api/v1/app/${appId}/msg/${msgId}/attempt/nonsense`))).toEqual([
      'path.attempt_id',
    ]);
    expect(locs(await api.request('GET', `/api/v1/app/${appId}/attempt/msg/${msgId}?status=9`))).toEqual([
      'query.status',
    ]);
  });

  it('records network failures with status code 0', async () => {
    const ep = await createEndpoint(api, appId, { url: `http://127.0.0.1:${await closedPort()}/x` });
    await publish();
    await engine.worker.runOnce();
    const [attempt] = await attemptsOf('endpoint', ep.id);
    expect(attempt).toMatchObject({
      responseStatusCode: 0,
      status: 2,
      failureKind: 'connection_refused',
      response: '',
    });
    expect(await attemptsOf('endpoint', ep.id, '?status_code_class=0')).toEqual([attempt]);
  });

  it('resends a delivered message as a manual attempt with a fresh budget', async () => {
    const ep = await createEndpoint(api, appId, { url: `${receiver.url}/ok` });
    const msgId = await publish();
    await engine.worker.runOnce();
    expect(await delivery(msgId, ep.id)).toMatchObject({ state: 'delivered', attempts: 1 });

    const res = await api.request('POST', `/api/v1/app/${appId}/msg/${msgId}/endpoint/${ep.id}/resend`);
    expect(res.status).toBe(202);
    expect(res.body).toEqual({});
    expect(await delivery(msgId, ep.id)).toMatchObject({ state: 'pending', attempts: 0, trigger: 1 });
    expect(await engine.worker.runOnce()).toBe(1);
    const [latest] = await attemptsOf('endpoint', ep.id);
    expect(latest).toMatchObject({ triggerType: 1, attemptNumber: 1, status: 0 });
  });

  it('makes a pending retry due now, keeping its attempt count', async () => {
    const ep = await createEndpoint(api, appId, { url: `${receiver.url}/fail` });
    const msgId = await publish();
    await engine.worker.runOnce();
    const waiting = await delivery(msgId, ep.id);
    expect(waiting).toMatchObject({ state: 'pending', attempts: 1 });
    expect(waiting!.next_attempt_at.getTime()).toBeGreaterThan(api.clock.now());
    expect(await engine.worker.runOnce()).toBe(0);

    await api.request('POST', `/api/v1/app/${appId}/msg/${msgId}/endpoint/${ep.id}/resend`);
    expect((await delivery(msgId, ep.id))!.next_attempt_at.getTime()).toBe(api.clock.now());
    expect(await engine.worker.runOnce()).toBe(1);
    expect((await attemptsOf('endpoint', ep.id))[0]).toMatchObject({ attemptNumber: 2, triggerType: 1 });
  });

  it('creates the delivery for an endpoint added after the message', async () => {
    const msgId = await publish();
    const late = await createEndpoint(api, appId, { url: `${receiver.url}/ok` });
    expect(await delivery(msgId, late.id)).toBeUndefined();
    expect(
      (await api.request('POST', `/api/v1/app/${appId}/msg/${msgId}/endpoint/${late.id}/resend`)).status,
    ).toBe(202);
    expect(await engine.worker.runOnce()).toBe(1);
    expect(await delivery(msgId, late.id)).toMatchObject({ state: 'delivered', trigger: 1 });
  });

  it('leaves an attempt under way alone, and holds for a paused endpoint', async () => {
    const ep = await createEndpoint(api, appId, { url: `${receiver.url}/ok` });
    const msgId = await publish();
    await api.db.query(
      `update courier_deliveries set lease_owner = 'someone', attempts = 3 where message_id = $1`,
      [msgId],
    );
    const before = await delivery(msgId, ep.id);
    await api.request('POST', `/api/v1/app/${appId}/msg/${msgId}/endpoint/${ep.id}/resend`);
    expect(await delivery(msgId, ep.id)).toEqual(before);

    const paused = await createEndpoint(api, appId, { url: `${receiver.url}/ok` });
    await api.request('POST', `/api/v1/app/${appId}/endpoint/${paused.id}/pause`);
    await api.request('POST', `/api/v1/app/${appId}/msg/${msgId}/endpoint/${paused.id}/resend`);
    expect(await delivery(msgId, paused.id)).toMatchObject({ state: 'held', trigger: 1 });
  });

  it('answers 404 for unknown message, endpoint or application', async () => {
    const ep = await createEndpoint(api, appId, { url: `${receiver.url}/ok` });
    const msgId = await publish();
    for (const path of [
      `/api/v1/app/${appId}/msg/nope/endpoint/${ep.id}/resend`,
      `/api/v1/app/${appId}/msg/${msgId}/endpoint/nope/resend`,
      `/api/v1/app/nope/msg/${msgId}/endpoint/${ep.id}/resend`,
    ]) {
      expect((await api.request('POST', path)).status, path).toBe(404);
    }
    expect((await api.request('GET', `/api/v1/app/${appId}/attempt/endpoint/nope`)).status).toBe(404);
    expect((await api.request('GET', `/api/v1/app/${appId}/attempt/msg/nope`)).status).toBe(404);
  });

  describe('attempted destinations of a message', () => {
    // Earlier tests' deliveries may fall due too: claims are counted at least, not exactly.
    const destinations = async (msg: string, query = '') => {
      const res = await api.request('GET', `/api/v1/app/${appId}/msg/${msg}/endpoint${query}`);
      expect(res.status, res.text).toBe(200);
      return res.body as {
        data: Record<string, unknown>[];
        done: boolean;
        iterator: string | null;
        prevIterator: string | null;
      };
    };
    const standing = async (msg: string) =>
      Object.fromEntries(
        (await destinations(msg)).data.map((d) => [
          d.id,
          [d.statusText, d.status, d.attempts, d.nextAttempt],
        ]),
      );
    const nextAttemptAt = async (msg: string, ep: string) =>
      (
        await api.db.query<{ at: Date }>(
          'select next_attempt_at as at from courier_deliveries where message_id = $1 and endpoint_id = $2',
          [msg, ep],
        )
      ).rows[0]!.at.toISOString();

    it('shows, per endpoint, whether the message was delivered, is retrying and when, or failed', async () => {
      const ok = await createEndpoint(api, appId, { url: `${receiver.url}/ok` });
      const retrying = await createEndpoint(api, appId, { url: `${receiver.url}/fail` });
      const gone = await createEndpoint(api, appId, { url: `${receiver.url}/gone` });
      const msgId = await publish({ eventId: 'where-is-it' });

      const due = new Date(api.clock.now()).toISOString();
      expect(await standing(msgId)).toEqual({
        [ok.id]: ['pending', 1, 0, due],
        [retrying.id]: ['pending', 1, 0, due],
        [gone.id]: ['pending', 1, 0, due],
      });

      expect(await engine.worker.runOnce()).toBeGreaterThanOrEqual(3);
      const retryAt = await nextAttemptAt(msgId, retrying.id);
      expect(Date.parse(retryAt)).toBeGreaterThan(api.clock.now());
      // By eventId too, and each item is the endpoint as GET returns it plus where the message stands.
      expect(await standing('where-is-it')).toEqual({
        [ok.id]: ['success', 0, 1, null],
        [retrying.id]: ['pending', 1, 1, retryAt],
        [gone.id]: ['fail', 2, 1, null],
      });
      const endpoint = (await api.request('GET', `/api/v1/app/${appId}/endpoint/${ok.id}`)).body;
      const [first] = (await destinations(msgId)).data;
      expect(first).toEqual({
        ...endpoint,
        status: 0,
        statusText: 'success',
        nextAttempt: null,
        attempts: 1,
      });
    });

    it('shows an attempt under way as sending, and a delivery held by a disabled endpoint as pending with no next attempt', async () => {
      const busy = await createEndpoint(api, appId, { url: `${receiver.url}/ok` });
      const off = await createEndpoint(api, appId, { url: `${receiver.url}/ok` });
      const msgId = await publish();
      const res = await api.request('PATCH', `/api/v1/app/${appId}/endpoint/${off.id}`, {
        body: { disabled: true },
      });
      expect(res.status, res.text).toBe(200);
      // Another worker's claim, its request not yet answered.
      const claimed = await claim(api.db, {
        owner: 'elsewhere',
        now: api.clock.now(),
        leaseMs: 60_000,
        limit: 10,
      });
      const claimedFor = claimed.deliveries.map((d) => d.endpointId);
      expect(claimedFor).toContain(busy.id);
      expect(claimedFor).not.toContain(off.id);
      expect(await standing(msgId)).toEqual({
        [busy.id]: ['sending', 3, 0, null],
        [off.id]: ['pending', 1, 0, null],
      });
    });

    it('shows a resent delivery as pending again, and leaves out endpoints deleted since', async () => {
      const ok = await createEndpoint(api, appId, { url: `${receiver.url}/ok` });
      const removed = await createEndpoint(api, appId, { url: `${receiver.url}/ok` });
      const msgId = await publish();
      expect(await engine.worker.runOnce()).toBeGreaterThanOrEqual(2);
      expect((await api.request('DELETE', `/api/v1/app/${appId}/endpoint/${removed.id}`)).status).toBe(204);
      const resend = await api.request('POST', `/api/v1/app/${appId}/msg/${msgId}/endpoint/${ok.id}/resend`);
      expect(resend.status).toBe(202);
      expect((await destinations(msgId)).data).toHaveLength(1);
      expect(await standing(msgId)).toEqual({
        [ok.id]: ['pending', 1, 0, new Date(api.clock.now()).toISOString()],
      });
      expect(await engine.worker.runOnce()).toBeGreaterThanOrEqual(1);
      // One item for the endpoint, though it now has two delivered attempts: the latest stands.
      const after = (await destinations(msgId)).data;
      expect(after.map((d) => [d.id, d.statusText, d.attempts])).toEqual([[ok.id, 'success', 1]]);
    });

    it('pages in endpoint order, and refuses unknown messages and malformed iterators', async () => {
      const ids: string[] = [];
      for (let i = 0; i < 3; i++)
        ids.push((await createEndpoint(api, appId, { url: `${receiver.url}/ok` })).id);
      const msgId = await publish();
      const first = await destinations(msgId, '?limit=2');
      expect(first.data.map((d) => d.id)).toEqual(ids.slice(0, 2));
      expect(first.done).toBe(false);
      const second = await destinations(msgId, `?limit=2&iterator=${first.iterator}`);
      expect(second.data.map((d) => d.id)).toEqual(ids.slice(2));
      expect(second.done).toBe(true);
      const back = await destinations(msgId, `?limit=2&iterator=${second.prevIterator}`);
      expect(back.data.map((d) => d.id)).toEqual(ids.slice(0, 2));
      const descending = await destinations(msgId, '?order=descending');
      expect(descending.data.map((d) => d.id)).toEqual([...ids].reverse());
      const lastTwo = await destinations(msgId, '?order=descending&limit=2');
      expect(lastTwo.data.map((d) => d.id)).toEqual([ids[2], ids[1]]);
      const rest = await destinations(msgId, `?order=descending&limit=2&iterator=${lastTwo.iterator}`);
      expect(rest.data.map((d) => d.id)).toEqual([ids[0]]);

      const missing = await api.request(
        'GET',
        `/api/v1/app/${appId}/msg/msg_01KDWPVNG0Z2T6P6PJXKZK51B0/endpoint`,
      );
      expect(missing.status).toBe(404);
      expect(missing.body).toMatchObject({ code: 'not_found' });
      expect((await api.request('GET', `/api/v1/app/no-such-app/msg/${msgId}/endpoint`)).status).toBe(404);
      expect(
        locs(await api.request('GET', `/api/v1/app/${appId}/msg/${msgId}/endpoint?iterator=msg_x`)),
      ).toEqual(['query.iterator']);
    });
  });
});
