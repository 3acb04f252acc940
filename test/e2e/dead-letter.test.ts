import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { type Receiver, startReceiver } from '../delivery/receiver.ts';
import { virtualWorker } from '../support/engine.ts';
import { createApp, createEndpoint, locs, startApi, type TestApi } from './support.ts';

describe('dead letters, replay, recover and replay-missing', () => {
  let api: TestApi;
  let receiver: Receiver;
  let status = 410;
  let engine: ReturnType<typeof virtualWorker>;
  let appId: string;
  let ep: { id: string };
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
  beforeEach(async () => {
    status = 410; // permanent: each delivery fails at once
    engine = virtualWorker(api.db, { clock: api.clock });
    appId = await createApp(api);
    ep = await createEndpoint(api, appId, { url: `${receiver.url}/hook` });
  });
  afterEach(() => engine.sender.close());

  const base = () => `/api/v1/app/${appId}/endpoint/${ep.id}`;
  /** Publishes n messages one second apart and lets them all fail. */
  const failMessages = async (n: number) => {
    const ids: string[] = [];
    for (let i = 0; i < n; i++) {
      api.clock.advance(1000);
      ids.push(
        (await api.request('POST', `/api/v1/app/${appId}/msg`, { body: { eventType: 'e', payload: { i } } }))
          .body.id,
      );
      await engine.worker.runOnce();
    }
    return ids;
  };
  const states = async () =>
    (
      await api.db.query<{ state: string }>(
        'select state from courier_delivery_states where endpoint_id = $1 order by id',
        [ep.id],
      )
    ).rows.map((r) => r.state);

  it('lists failed deliveries oldest first, paginated and bounded by time', async () => {
    const start = api.clock.now();
    const ids = await failMessages(5);
    const page = await api.request('GET', `${base()}/dead-letter?limit=2`);
    expect(page.status).toBe(200);
    expect(page.body.data.map((d: { msgId: string }) => d.msgId)).toEqual(ids.slice(0, 2));
    expect(page.body.data[0]).toMatchObject({
      endpointId: ep.id,
      state: 'failed',
      attempts: 1,
      lastError: expect.any(String),
      payloadExpunged: false,
    });
    expect(page.body.done).toBe(false);
    const next = await api.request('GET', `${base()}/dead-letter?limit=10&iterator=${page.body.iterator}`);
    expect(next.body.data.map((d: { msgId: string }) => d.msgId)).toEqual(ids.slice(2));
    expect(next.body.done).toBe(true);
    // Message i failed at start + i seconds.
    const at = (s: number) => new Date(start + s * 1000).toISOString();
    const bounded = await api.request('GET', `${base()}/dead-letter?since=${at(3)}&until=${at(5)}`);
    expect(bounded.body.data.map((d: { msgId: string }) => d.msgId)).toEqual(ids.slice(2, 4));
    expect(locs(await api.request('GET', `${base()}/dead-letter?iterator=abc`))).toEqual(['query.iterator']);
    // One whose payload was deleted is still a dead letter, flagged as one a replay cannot send.
    expect((await api.request('DELETE', `/api/v1/app/${appId}/msg/${ids[0]}/content`)).status).toBe(204);
    const flagged = await api.request('GET', `${base()}/dead-letter?limit=2`);
    expect(flagged.body.data.map((d: { payloadExpunged: boolean }) => d.payloadExpunged)).toEqual([
      true,
      false,
    ]);
  });

  it('replays chosen messages, or all in a range, with a fresh budget', async () => {
    const ids = await failMessages(3);
    status = 200;
    const one = await api.request('POST', `${base()}/dead-letter/replay`, { body: { messageIds: [ids[1]] } });
    expect(one.body).toEqual({ replayed: 1 });
    expect(await states()).toEqual(['failed', 'pending', 'failed']);
    await engine.worker.runOnce();
    expect(await states()).toEqual(['failed', 'delivered', 'failed']);

    const all = await api.request('POST', `${base()}/dead-letter/replay`, { body: {} });
    expect(all.body).toEqual({ replayed: 2 });
    await engine.worker.runOnce();
    expect(await states()).toEqual(['delivered', 'delivered', 'delivered']);
    expect((await api.request('POST', `${base()}/dead-letter/replay`)).body).toEqual({ replayed: 0 });
  });

  it("replays chosen dead letters by deliveryId, only this endpoint's", async () => {
    const ids = await failMessages(2);
    const listed = (await api.request('GET', `${base()}/dead-letter`)).body.data as { deliveryId: number }[];
    const other = await createEndpoint(api, appId, { url: `${receiver.url}/other` });
    const theirs = (await api.request('GET', `/api/v1/app/${appId}/endpoint/${other.id}/dead-letter`)).body
      .data as { deliveryId: number }[];
    expect(theirs).toEqual([]);
    status = 200;
    const both = await api.request('POST', `${base()}/dead-letter/replay`, {
      body: { messageIds: [ids[0]], deliveryIds: [listed[0]!.deliveryId] },
    });
    expect(both.status).toBe(422);
    expect(locs(both)).toEqual(['body.deliveryIds']);
    // Beyond what a bigint holds (and a double counts exactly): refused by the schema, not PostgreSQL.
    const huge = await api.request('POST', `${base()}/dead-letter/replay`, { body: { deliveryIds: [1e19] } });
    expect(locs(huge)).toEqual(['body.deliveryIds.0']);
    // Another endpoint's replay names this one's delivery: nothing happens.
    const elsewhere = await api.request(
      'POST',
      `/api/v1/app/${appId}/endpoint/${other.id}/dead-letter/replay`,
      {
        body: { deliveryIds: [listed[0]!.deliveryId] },
      },
    );
    expect(elsewhere.body).toEqual({ replayed: 0 });
    const one = await api.request('POST', `${base()}/dead-letter/replay`, {
      body: { deliveryIds: [listed[1]!.deliveryId] },
    });
    expect(one.body).toEqual({ replayed: 1 });
    expect(await states()).toEqual(['failed', 'pending']);
  });

  it('recover replays what failed of the messages sent in [since, until), as Svix, and answers 202 with the finished task', async () => {
    // Sent at start + 1, 2, 3 s; the first two fail only an hour later (they were retried).
    const start = api.clock.now();
    status = 503;
    await failMessages(2);
    status = 410;
    await failMessages(1);
    api.clock.advance(3_600_000);
    await engine.worker.runOnce();
    expect(await states()).toEqual(['failed', 'failed', 'failed']);
    const at = (s: number) => new Date(start + s * 1000).toISOString();
    // Sent in [2 s, 3 s): the second alone, though all three failed after 2 s, and two after 3 s.
    const res = await api.request('POST', `${base()}/recover`, { body: { since: at(2), until: at(3) } });
    expect(res.status).toBe(202);
    expect(res.body).toEqual({
      id: expect.stringMatching(/^qtask_[0-9A-Z]{26}$/),
      status: 'finished',
      task: 'endpoint.recover',
      updatedAt: new Date(api.clock.now()).toISOString(),
      replayed: 1,
    });
    expect(await states()).toEqual(['failed', 'pending', 'failed']);
    await api.request('POST', `${base()}/recover`, { body: { since: at(3), until: null } });
    expect(await states()).toEqual(['failed', 'pending', 'pending']);
    expect(locs(await api.request('POST', `${base()}/recover`, { body: {} }))).toEqual(['body.since']);
    // An empty range is a mistake, not a question whose answer is none.
    const swapped = await api.request('POST', `${base()}/recover`, { body: { since: at(3), until: at(2) } });
    expect([swapped.status, locs(swapped)]).toEqual([422, ['body.until']]);
  });

  it('replay-missing sends what the endpoint never had a delivery of, held while it is paused', async () => {
    status = 200;
    const start = api.clock.now();
    const publishOne = async () => {
      api.clock.advance(1000);
      return (
        await api.request('POST', `/api/v1/app/${appId}/msg`, { body: { eventType: 'e', payload: {} } })
      ).body.id as string;
    };
    await publishOne();
    await engine.worker.runOnce(); // delivered
    await api.request('PATCH', base(), { body: { disabled: true } });
    const missed = [await publishOne(), await publishOne()];
    expect(await states()).toEqual(['delivered']);
    await api.request('POST', `${base()}/pause`);
    const at = (s: number) => new Date(start + s * 1000).toISOString();
    const res = await api.request('POST', `${base()}/replay-missing`, {
      body: { since: at(0), until: at(3) },
    });
    expect(res.status).toBe(202);
    expect(res.body).toEqual({
      id: expect.stringMatching(/^qtask_[0-9A-Z]{26}$/),
      status: 'finished',
      task: 'endpoint.replay',
      updatedAt: new Date(api.clock.now()).toISOString(),
      replayed: 1,
    });
    expect(await states()).toEqual(['delivered', 'held']);
    await api.request('POST', `${base()}/resume`);
    api.clock.advance(60_000); // released spread out over the rate limit's time
    await engine.worker.runOnce();
    expect(await states()).toEqual(['delivered', 'delivered']);
    const rest = await api.request('POST', `${base()}/replay-missing`, { body: { since: at(0) } });
    expect(rest.body.replayed).toBe(1);
    await engine.worker.runOnce();
    const sent = await api.db.query<{ message_id: string }>(
      'select message_id from courier_attempts where endpoint_id = $1 and trigger = 1 order by started_at',
      [ep.id],
    );
    expect(sent.rows.map((r) => r.message_id)).toEqual(missed);

    expect(locs(await api.request('POST', `${base()}/replay-missing`, { body: {} }))).toEqual(['body.since']);
    const swapped = await api.request('POST', `${base()}/replay-missing`, {
      body: { since: at(3), until: at(3) },
    });
    expect([swapped.status, locs(swapped)]).toEqual([422, ['body.until']]);
    const unknown = await api.request('POST', `/api/v1/app/${appId}/endpoint/ep_unknown/replay-missing`, {
      body: { since: at(0) },
    });
    expect([unknown.status, unknown.body.code]).toEqual([404, 'not_found']);
  });
});
