import { Svix } from 'svix';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PayloadExpirySweeper } from '../../src/dispatch/payload-expiry.ts';
import { claim } from '../../src/store/queries/claim.ts';
import { complete } from '../../src/store/queries/complete.ts';
import {
  claimIdempotencyKey,
  completeIdempotencyKey,
  findIdempotencyKey,
} from '../../src/store/repos/idempotency.ts';
import { type Receiver, startReceiver } from '../delivery/receiver.ts';
import { virtualWorker } from '../support/engine.ts';
import { retryCompletion } from '../support/fixtures.ts';
import { createApp, createEndpoint, locs, publishMessage, startApi, type TestApi, TOKEN } from './support.ts';

describe('deleting a message’s payload (DELETE …/msg/{msg}/content)', () => {
  let api: TestApi;
  let receiver: Receiver;
  beforeAll(async () => {
    api = await startApi();
    receiver = await startReceiver((req, res) => {
      res.writeHead(req.url === '/fail' ? 500 : req.url === '/gone' ? 410 : 200);
      res.end();
    });
  });
  afterAll(async () => {
    await receiver.close();
    await api.close();
  });

  const stored = async (msgId: string) =>
    (
      await api.db.query<{ bytes: number; expunged_at: Date | null }>(
        'select length(payload) as bytes, expunged_at from courier_messages where id = $1',
        [msgId],
      )
    ).rows[0]!;
  const deliveryOf = async (msgId: string, endpointId: string) =>
    (
      await api.db.query<{ state: string; last_error: string | null }>(
        'select state, last_error from courier_delivery_states where message_id = $1 and endpoint_id = $2',
        [msgId, endpointId],
      )
    ).rows[0];

  it('deletes the bytes for good, fails what was still to be sent, and refuses resends and replays', async () => {
    const engine = virtualWorker(api.db, { clock: api.clock });
    const appId = await createApp(api);
    const ok = await createEndpoint(api, appId, { url: `${receiver.url}/ok` });
    const retrying = await createEndpoint(api, appId, { url: `${receiver.url}/fail` });
    const gone = await createEndpoint(api, appId, { url: `${receiver.url}/gone` });
    const paused = await createEndpoint(api, appId, { url: `${receiver.url}/ok` });
    expect((await api.request('POST', `/api/v1/app/${appId}/endpoint/${paused.id}/pause`)).status).toBe(200);
    const msgId = await publishMessage(api, appId, {
      eventId: 'oops',
      payload: { card: '4242 4242 4242 4242' },
    });
    expect(await deliveryOf(msgId, paused.id)).toMatchObject({ state: 'held' });
    expect(await engine.worker.runOnce()).toBe(3);
    await engine.sender.close();

    const res = await api.request('DELETE', `/api/v1/app/${appId}/msg/oops/content`);
    expect(res.status, res.text).toBe(204);
    const expungedAt = new Date(api.clock.now()).toISOString();
    expect(await stored(msgId)).toEqual({ bytes: 0, expunged_at: new Date(api.clock.now()) });
    const message = await api.request('GET', `/api/v1/app/${appId}/msg/${msgId}`);
    expect(message.body).toMatchObject({ id: msgId, payload: {}, expungedAt });
    const listed = await api.request('GET', `/api/v1/app/${appId}/msg?with_content=true`);
    expect(listed.body.data).toEqual([expect.objectContaining({ id: msgId, payload: {}, expungedAt })]);

    // Delivered stays delivered; the retry still to come fails; the dead letter stays one.
    expect(await deliveryOf(msgId, ok.id)).toMatchObject({ state: 'delivered' });
    expect(await deliveryOf(msgId, retrying.id)).toEqual({ state: 'failed', last_error: 'payload expunged' });
    expect(await deliveryOf(msgId, paused.id)).toEqual({ state: 'failed', last_error: 'payload expunged' });
    expect(await deliveryOf(msgId, gone.id)).toMatchObject({ state: 'failed' });

    const resend = await api.request('POST', `/api/v1/app/${appId}/msg/${msgId}/endpoint/${ok.id}/resend`);
    expect(resend.status).toBe(409);
    expect(resend.body).toMatchObject({ code: 'payload_expunged' });
    for (const endpoint of [retrying.id, gone.id]) {
      const replay = await api.request(
        'POST',
        `/api/v1/app/${appId}/endpoint/${endpoint}/dead-letter/replay`,
        {
          body: {},
        },
      );
      expect(replay.body).toEqual({ replayed: 0 });
      const recover = await api.request('POST', `/api/v1/app/${appId}/endpoint/${endpoint}/recover`, {
        body: { since: '2020-01-01T00:00:00Z' },
      });
      expect(recover.status, recover.text).toBe(202);
    }
    expect(await deliveryOf(msgId, retrying.id)).toMatchObject({ state: 'failed' });
    expect(await deliveryOf(msgId, gone.id)).toMatchObject({ state: 'failed' });

    // Again: nothing changes, not even the instant.
    api.clock.advance(60_000);
    expect((await api.request('DELETE', `/api/v1/app/${appId}/msg/${msgId}/content`)).status).toBe(204);
    expect((await api.request('GET', `/api/v1/app/${appId}/msg/${msgId}`)).body.expungedAt).toBe(expungedAt);
  });

  it('blanks the response an idempotent publish kept for its retries, even one stored after the deletion', async () => {
    const appId = await createApp(api);
    const body = { eventType: 'card.added', payload: { card: '4242 4242 4242 4242' } };
    const publish = (key: string) =>
      api.request('POST', `/api/v1/app/${appId}/msg`, { body, headers: { 'idempotency-key': key } });
    const sent = await publish('sdk-key-1');
    expect(sent.status).toBe(202);
    expect((await api.request('DELETE', `/api/v1/app/${appId}/msg/${sent.body.id}/content`)).status).toBe(
      204,
    );
    const kept = await api.db.query(`select body from courier_idempotency_keys where body like '%4242%'`);
    expect(kept.rows).toEqual([]);
    const retried = await publish('sdk-key-1');
    expect(retried.headers.get('idempotent-replayed')).toBe('true');
    const { expungedAt } = (await api.request('GET', `/api/v1/app/${appId}/msg/${sent.body.id}`)).body;
    expect(expungedAt).toEqual(expect.any(String));
    expect(retried.body).toMatchObject({ id: sent.body.id, payload: {}, expungedAt });

    // The response is stored after the handler: a deletion committed in between is seen then.
    const key = { scope: 'test', key: 'late', method: 'POST', path: `/api/v1/app/${appId}/msg` };
    expect(
      await claimIdempotencyKey(api.db, key, 'print', api.clock.now(), 60_000, 86_400_000),
    ).not.toBeNull();
    await completeIdempotencyKey(api.db, key, {
      status: 202,
      contentType: 'application/json',
      body: JSON.stringify({ id: sent.body.id, payload: body.payload }),
      messageId: sent.body.id,
    });
    expect((await findIdempotencyKey(api.db, key))?.body).not.toContain('4242');
  });

  it('expunges a payload holding U+0000, which jsonb cannot hold, with the copy its idempotency key kept', async () => {
    const appId = await createApp(api);
    const body = {
      eventType: 'card.added',
      payload: { card: 'a\u0000b', path: 'c:\\u0000', both: 'x\\\u0000', n: 1 },
    };
    const publish = () =>
      api.request('POST', `/api/v1/app/${appId}/msg`, { body, headers: { 'idempotency-key': 'nul-key' } });
    const sent = await publish();
    expect(sent.status).toBe(202);
    expect(sent.body.payload).toEqual(body.payload);
    const expunge = await api.request('DELETE', `/api/v1/app/${appId}/msg/${sent.body.id}/content`);
    expect(expunge.status).toBe(204);
    const retried = await publish();
    expect(retried.headers.get('idempotent-replayed')).toBe('true');
    expect(retried.body).toMatchObject({ id: sent.body.id, eventType: 'card.added', payload: {} });
  });

  it('keeps a payload for the retention its message asked for, then expunges it in the worker’s housekeeping', async () => {
    const appId = await createApp(api);
    const retrying = await createEndpoint(api, appId, { url: `${receiver.url}/fail` });
    const expiry = async (msgId: string) =>
      (
        await api.db.query<{ expires_at: Date }>(
          'select expires_at from courier_payload_expiries where message_id = $1',
          [msgId],
        )
      ).rows[0]?.expires_at.getTime();
    const now = api.clock.now();
    const hours = await publishMessage(api, appId, { payloadRetentionHours: 1, payload: { card: '4242' } });
    expect(await expiry(hours)).toBe(now + 3_600_000);
    // Svix's own SDK, with its days; and a message that says nothing keeps its payload for the retention period.
    const svix = new Svix(TOKEN, { serverUrl: api.url });
    const days = await svix.message.create(appId, {
      eventType: 'e',
      payload: { n: 1 },
      payloadRetentionPeriod: 5,
    });
    expect(await expiry(days.id)).toBe(now + 5 * 86_400_000);
    expect(await expiry(await publishMessage(api, appId))).toBeUndefined();

    for (const [fields, loc] of [
      [{ payloadRetentionPeriod: 4 }, 'body.payloadRetentionPeriod'],
      [{ payloadRetentionPeriod: 91 }, 'body.payloadRetentionPeriod'],
      [{ payloadRetentionHours: 0 }, 'body.payloadRetentionHours'],
      [{ payloadRetentionPeriod: 5, payloadRetentionHours: 1 }, 'body.payloadRetentionHours'],
    ] as const) {
      const res = await api.request('POST', `/api/v1/app/${appId}/msg`, {
        body: { eventType: 'e', payload: {}, ...fields },
      });
      expect(res.status, JSON.stringify(fields)).toBe(422);
      expect(locs(res)).toEqual([loc]);
    }

    // Its first attempt fails (500), and it is still retrying when the hour runs out.
    const engine = virtualWorker(api.db, { clock: api.clock, reapIntervalMs: 20 });
    expect(await engine.worker.runOnce()).toBe(3);
    expect(await deliveryOf(hours, retrying.id)).toMatchObject({ state: 'pending' });
    api.clock.advance(3_600_000);
    await engine.worker.start();
    try {
      const deadline = Date.now() + 5_000;
      while ((await stored(hours)).expunged_at === null && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 10));
      }
    } finally {
      await engine.worker.stop();
      await engine.sender.close();
    }
    expect(await stored(hours)).toEqual({ bytes: 0, expunged_at: new Date(api.clock.now()) });
    expect(await deliveryOf(hours, retrying.id)).toEqual({ state: 'failed', last_error: 'payload expired' });
    const message = await api.request('GET', `/api/v1/app/${appId}/msg/${hours}`);
    expect(message.body).toMatchObject({ payload: {}, expungedAt: new Date(api.clock.now()).toISOString() });
    expect((await stored(days.id)).bytes).toBeGreaterThan(0);
  });

  it('shows a payload past its retention as gone in every read before the sweep, and the sweep records that instant', async () => {
    const appId = await createApp(api);
    const retrying = await createEndpoint(api, appId, { url: `${receiver.url}/fail` });
    const body = { eventType: 'e', payload: { card: '4242' }, payloadRetentionHours: 1 };
    const publish = () =>
      api.request('POST', `/api/v1/app/${appId}/msg`, { body, headers: { 'idempotency-key': 'kept-1h' } });
    const sent = await publish();
    expect(sent.status).toBe(202);
    const msgId = sent.body.id as string;
    const keptForever = await publishMessage(api, appId, { payload: { card: '5555' } });
    const deletedLate = await publishMessage(api, appId, { payloadRetentionHours: 1 });
    const engine = virtualWorker(api.db, { clock: api.clock });
    expect(await engine.worker.runOnce()).toBe(3);
    await engine.sender.close();
    const expiry = new Date(api.clock.now() + 3_600_000).toISOString();
    const reads = async () => {
      const listed = await api.request('GET', `/api/v1/app/${appId}/msg`);
      const atEndpoint = await api.request('GET', `/api/v1/app/${appId}/endpoint/${retrying.id}/msg`);
      const attempts = await api.request(
        'GET',
        `/api/v1/app/${appId}/attempt/endpoint/${retrying.id}?with_msg=true`,
      );
      const ofMine = <T extends { id?: string; msgId?: string; msg?: unknown }>(page: { data: T[] }) =>
        page.data.filter((x) => (x.msgId ?? x.id) === msgId).map((x) => x.msg ?? x);
      return [
        (await api.request('GET', `/api/v1/app/${appId}/msg/${msgId}`)).body,
        ...ofMine(listed.body),
        ...ofMine(atEndpoint.body),
        ...ofMine(attempts.body),
      ].map((m) => ({ payload: m.payload, expungedAt: m.expungedAt, payloadExpiresAt: m.payloadExpiresAt }));
    };
    expect(sent.body.payloadExpiresAt).toBe(expiry);
    const kept = { payload: { card: '4242' }, expungedAt: null, payloadExpiresAt: expiry };
    api.clock.advance(3_600_000 - 1);
    expect(await reads()).toEqual([kept, kept, kept, kept]);

    api.clock.advance(1);
    const gone = { payload: {}, expungedAt: expiry, payloadExpiresAt: null };
    expect(await reads()).toEqual([gone, gone, gone, gone]);
    const repeated = await publish();
    expect(repeated.headers.get('idempotent-replayed')).toBe('true');
    expect(repeated.body).toMatchObject({
      id: msgId,
      payload: {},
      expungedAt: expiry,
      payloadExpiresAt: null,
    });
    expect(repeated.text).not.toContain('4242');
    const resend = await api.request(
      'POST',
      `/api/v1/app/${appId}/msg/${msgId}/endpoint/${retrying.id}/resend`,
    );
    expect(resend.status).toBe(409);
    expect(resend.body).toMatchObject({ code: 'payload_expunged' });
    // Deleted after its retention ran out, it went when that ran out.
    api.clock.advance(60_000);
    expect((await api.request('DELETE', `/api/v1/app/${appId}/msg/${deletedLate}/content`)).status).toBe(204);
    expect(await deliveryOf(deletedLate, retrying.id)).toEqual({
      state: 'failed',
      last_error: 'payload expired',
    });
    expect((await api.request('GET', `/api/v1/app/${appId}/msg/${deletedLate}`)).body.expungedAt).toBe(
      expiry,
    );
    // A message that asked for no retention of its own keeps its payload.
    expect((await api.request('GET', `/api/v1/app/${appId}/msg/${keptForever}`)).body).toMatchObject({
      payload: { card: '5555' },
      expungedAt: null,
      payloadExpiresAt: null,
    });

    // A sweep an hour late empties it, and the instant it shows stays the expiry.
    api.clock.advance(3_600_000);
    expect(await new PayloadExpirySweeper(api.db).sweep(api.clock.now())).toMatchObject({ expunged: 1 });
    expect(await stored(msgId)).toEqual({ bytes: 0, expunged_at: new Date(expiry) });
    expect(await reads()).toEqual([gone, gone, gone, gone]);
  });

  it('waits for an attempt under way (409), and answers 404 for an unknown message', async () => {
    const appId = await createApp(api);
    await createEndpoint(api, appId, { url: `${receiver.url}/ok` });
    const msgId = await publishMessage(api, appId);
    const claimed = await claim(api.db, {
      owner: 'elsewhere',
      now: api.clock.now(),
      leaseMs: 60_000,
      limit: 250,
    });
    expect(claimed.deliveries.map((d) => d.messageId)).toContain(msgId);

    const res = await api.request('DELETE', `/api/v1/app/${appId}/msg/${msgId}/content`);
    expect(res.status).toBe(409);
    expect(res.body).toMatchObject({ code: 'attempt_in_progress' });
    expect((await stored(msgId)).expunged_at).toBeNull();
    const missing = await api.request('DELETE', `/api/v1/app/${appId}/msg/no-such-event/content`);
    expect(missing.status).toBe(404);
  });

  it('deletes a payload past its retention at once though an attempt is under way, its bytes left to the sweep after it', async () => {
    const appId = await createApp(api);
    const sending = await createEndpoint(api, appId, { url: `${receiver.url}/ok` });
    const waiting = await createEndpoint(api, appId, { url: `${receiver.url}/ok` });
    const expiry = new Date(api.clock.now() + 3_600_000);
    const sent = await api.request('POST', `/api/v1/app/${appId}/msg`, {
      body: { eventType: 'e', payload: { card: '4242' }, payloadRetentionHours: 1 },
      headers: { 'idempotency-key': 'under-way' },
    });
    const msgId = sent.body.id as string;
    const claimed = await claim(api.db, {
      owner: 'elsewhere',
      now: api.clock.now(),
      leaseMs: 60_000,
      limit: 250,
    });
    const busy = claimed.deliveries.find((d) => d.messageId === msgId && d.endpointId === sending.id)!;
    await api.db.query(
      `update courier_deliveries set lease_owner = null, lease_expires_at = null
        where lease_owner = 'elsewhere' and id <> $1`,
      [busy.id],
    );
    const keptCopy = async () =>
      (
        await api.db.query(
          `select 1 from courier_idempotency_keys where message_id = $1 and body like '%4242%'`,
          [msgId],
        )
      ).rows.length;
    expect(await keptCopy()).toBe(1);

    // Before its expiry the attempt holds the deletion back, as for any payload.
    api.clock.advance(3_600_000 - 1);
    expect((await api.request('DELETE', `/api/v1/app/${appId}/msg/${msgId}/content`)).status).toBe(409);
    api.clock.advance(1);
    expect((await api.request('DELETE', `/api/v1/app/${appId}/msg/${msgId}/content`)).status).toBe(204);
    expect(await api.request('POST', `/api/v1/app/${appId}/msg/expunge-all-contents`)).toMatchObject({
      status: 202,
    });
    expect((await api.request('GET', `/api/v1/app/${appId}/msg/${msgId}`)).body).toMatchObject({
      payload: {},
      expungedAt: expiry.toISOString(),
      payloadExpiresAt: null,
    });
    expect(await deliveryOf(msgId, waiting.id)).toEqual({ state: 'failed', last_error: 'payload expired' });
    // The copy the idempotent publish kept is never sent: it goes at once.
    expect(await keptCopy()).toBe(0);
    // The attempt under way keeps its bytes, and a sweep meanwhile leaves them.
    const sweeper = new PayloadExpirySweeper(api.db);
    await sweeper.sweep(api.clock.now());
    expect(await stored(msgId)).toMatchObject({ expunged_at: null });
    expect((await stored(msgId)).bytes).toBeGreaterThan(0);
    // Its retry is not sent with them: it fails as expired, and nothing is there to claim.
    await complete(api.db, 'elsewhere', api.clock.now(), [retryCompletion(busy.id, 1, api.clock.now())], 100);
    expect(await deliveryOf(msgId, sending.id)).toEqual({ state: 'failed', last_error: 'payload expired' });
    const again = await claim(api.db, {
      owner: 'elsewhere',
      now: api.clock.now(),
      leaseMs: 60_000,
      limit: 250,
    });
    expect(again.deliveries.filter((d) => d.messageId === msgId)).toEqual([]);
    await api.db.query(
      `update courier_deliveries set lease_owner = null, lease_expires_at = null where lease_owner = 'elsewhere'`,
    );
    // The sweep after it takes the bytes, and records the expiry.
    await sweeper.sweep(api.clock.now());
    expect(await stored(msgId)).toEqual({ bytes: 0, expunged_at: expiry });
  });

  it('deletes every payload of an application (expungeAllContents), and says when attempts under way held some back', async () => {
    const appId = await createApp(api);
    const otherApp = await createApp(api);
    await createEndpoint(api, appId, { url: `${receiver.url}/ok` });
    await createEndpoint(api, otherApp, { url: `${receiver.url}/ok` });
    const mine = [await publishMessage(api, appId), await publishMessage(api, appId)];
    const theirs = await publishMessage(api, otherApp);
    // One of mine is being sent elsewhere.
    const claimed = await claim(api.db, {
      owner: 'elsewhere',
      now: api.clock.now(),
      leaseMs: 60_000,
      limit: 250,
    });
    const busy = claimed.deliveries.find((d) => d.messageId === mine[1])!;
    await api.db.query(
      `update courier_deliveries set lease_owner = null, lease_expires_at = null
        where lease_owner = 'elsewhere' and id <> $1`,
      [busy.id],
    );

    const held = await api.request('POST', `/api/v1/app/${appId}/msg/expunge-all-contents`);
    expect(held.status).toBe(409);
    expect(held.body).toMatchObject({
      code: 'attempt_in_progress',
      detail: expect.stringContaining('1 message has'),
    });
    expect((await stored(mine[0]!)).bytes).toBe(0);
    expect((await stored(mine[1]!)).expunged_at).toBeNull();

    await api.db.query(
      `update courier_deliveries set lease_owner = null, lease_expires_at = null where id = $1`,
      [busy.id],
    );
    const svix = new Svix(TOKEN, { serverUrl: api.url });
    const task = await svix.message.expungeAllContents(appId);
    expect(task).toMatchObject({ status: 'finished', task: 'application.purge_content' });
    expect(task.id).toMatch(/^qtask_/);
    expect((await stored(mine[1]!)).bytes).toBe(0);
    expect((await stored(theirs)).bytes).toBeGreaterThan(0);
    const missing = await api.request('POST', '/api/v1/app/no-such-app/msg/expunge-all-contents');
    expect(missing.status).toBe(404);
  });

  it("deletes an attempt's kept response (expungeContent), and answers 404 for an unknown attempt", async () => {
    const engine = virtualWorker(api.db, { clock: api.clock });
    const appId = await createApp(api);
    await createEndpoint(api, appId, { url: `${receiver.url}/fail` });
    const msgId = await publishMessage(api, appId);
    await engine.worker.runOnce();
    await engine.sender.close();
    const svix = new Svix(TOKEN, { serverUrl: api.url });
    const [attempt] = (await svix.messageAttempt.listByMsg(appId, msgId)).data;
    await api.db.query(
      `update courier_attempts set response_body = 'secret', response_headers = '{"x-secret": "1"}' where id = $1`,
      [attempt!.id],
    );
    await svix.messageAttempt.expungeContent(appId, msgId, attempt!.id);
    const after = await api.request('GET', `/api/v1/app/${appId}/msg/${msgId}/attempt/${attempt!.id}`);
    expect(after.body).toMatchObject({
      id: attempt!.id,
      response: '',
      responseHeaders: null,
      responseStatusCode: 500,
    });
    const unknown = await api.request(
      'DELETE',
      `/api/v1/app/${appId}/msg/${msgId}/attempt/atmpt_01KDWPVNG0Z2T6P6PJXKZK51B0/content`,
    );
    expect(unknown.status).toBe(404);
  });
});
