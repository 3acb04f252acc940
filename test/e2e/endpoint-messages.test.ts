import { MessageStatus, Svix } from 'svix';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { claim } from '../../src/store/queries/claim.ts';
import { type Receiver, startReceiver } from '../delivery/receiver.ts';
import { virtualWorker } from '../support/engine.ts';
import { createApp, createEndpoint, locs, publishMessage, startApi, type TestApi, TOKEN } from './support.ts';

/** An API and a receiver answering by the payload's n: 503 to 'retry', 410 to 'gone', else 200. */
function useApiAndReceiver() {
  const parts = {} as { api: TestApi; receiver: Receiver };
  beforeAll(async () => {
    parts.api = await startApi();
    parts.receiver = await startReceiver((req, res, body) => {
      const { n } = JSON.parse(body.toString()) as { n: string };
      res.writeHead(n === 'retry' ? 503 : n === 'gone' || req.url === '/solo' ? 410 : 200);
      res.end();
    });
  });
  afterAll(async () => {
    await parts.receiver.close();
    await parts.api.close();
  });
  return parts;
}

describe('the messages sent to an endpoint (listAttemptedMessages)', () => {
  const parts = useApiAndReceiver();
  let api: TestApi;
  let receiver: Receiver;
  beforeAll(() => {
    ({ api, receiver } = parts);
  });

  it('lists each with where it stands there, newest first, filtered and paged as Svix', async () => {
    const engine = virtualWorker(api.db, { clock: api.clock });
    const appId = await createApp(api);
    const ep = await createEndpoint(api, appId, { url: `${receiver.url}/hook`, filterTypes: ['e', 'f'] });
    const other = await createEndpoint(api, appId, { url: `${receiver.url}/other`, filterTypes: ['g'] });
    const publish = async (n: string, eventType = 'e') => {
      api.clock.advance(1);
      return publishMessage(api, appId, { eventType, payload: { n } });
    };
    const delivered = await publish('ok');
    const retrying = await publish('retry');
    const failed = await publish('gone', 'f');
    const elsewhere = await publish('ok', 'g'); // to the other endpoint only
    expect(await engine.worker.runOnce()).toBe(4);
    const sending = await publish('ok');
    await claim(api.db, { owner: 'elsewhere', now: api.clock.now(), leaseMs: 60_000, limit: 10 });
    const waiting = await publish('ok');
    await engine.sender.close();

    const svix = new Svix(TOKEN, { serverUrl: api.url });
    const listed = await svix.messageAttempt.listAttemptedMessages(appId, ep.id);
    expect(listed.done).toBe(true);
    expect(listed.data.map((m) => [m.id, m.status, m.statusText])).toEqual([
      [waiting, MessageStatus.Pending, 'pending'],
      [sending, MessageStatus.Sending, 'sending'],
      [failed, MessageStatus.Fail, 'fail'],
      [retrying, MessageStatus.Pending, 'pending'],
      [delivered, MessageStatus.Success, 'success'],
    ]);
    expect(listed.data[0]).toMatchObject({ eventType: 'e', payload: { n: 'ok' }, deliverAt: null });
    expect(listed.data[0]!.nextAttempt?.getTime()).toBe(api.clock.now());
    expect(listed.data[3]!.nextAttempt!.getTime()).toBeGreaterThan(api.clock.now());
    expect(listed.data[1]!.nextAttempt).toBeNull(); // being sent
    expect((await svix.messageAttempt.listAttemptedMessages(appId, other.id)).data.map((m) => m.id)).toEqual([
      elsewhere,
    ]);

    const ids = async (query: string) =>
      (await api.request('GET', `/api/v1/app/${appId}/endpoint/${ep.id}/msg${query}`)).body.data.map(
        (m: { id: string }) => m.id,
      );
    expect(await ids('?status=1')).toEqual([waiting, retrying]);
    expect(await ids('?status=0')).toEqual([delivered]);
    expect(await ids('?event_types=f')).toEqual([failed]);
    expect(await ids('?order=ascending&limit=2')).toEqual([delivered, retrying]);
    const page = await svix.messageAttempt.listAttemptedMessages(appId, ep.id, { limit: 2 });
    expect(page.data.map((m) => m.id)).toEqual([waiting, sending]);
    const next = await svix.messageAttempt.listAttemptedMessages(appId, ep.id, {
      limit: 2,
      iterator: page.iterator!,
    });
    expect(next.data.map((m) => m.id)).toEqual([failed, retrying]);
    const bare = await api.request('GET', `/api/v1/app/${appId}/endpoint/${ep.id}/msg?with_content=false`);
    expect(bare.body.data[0].payload).toEqual({});

    expect((await api.request('GET', `/api/v1/app/${appId}/endpoint/ep_nope/msg`)).status).toBe(404);
    expect(locs(await api.request('GET', `/api/v1/app/${appId}/endpoint/${ep.id}/msg?status=7`))).toEqual([
      'query.status',
    ]);
  });

  it("shows a pending message's next attempt no sooner than its endpoint's Retry-After hold", async () => {
    const appId = await createApp(api);
    const ep = await createEndpoint(api, appId, { url: `${receiver.url}/held` });
    const msgId = await publishMessage(api, appId, { eventType: 'e', payload: { n: 'ok' } });
    const held = api.clock.now() + 3_600_000;
    await api.db.query('update courier_endpoint_queues set retry_after_until = $2 where endpoint_id = $1', [
      ep.id,
      new Date(held),
    ]);
    const svix = new Svix(TOKEN, { serverUrl: api.url });
    const [listed] = (await svix.messageAttempt.listAttemptedMessages(appId, ep.id)).data;
    expect(listed!.nextAttempt?.getTime()).toBe(held);
    const [destination] = (await svix.messageAttempt.listAttemptedDestinations(appId, msgId)).data;
    expect(destination!.nextAttempt?.getTime()).toBe(held);
    // A hold already past leaves the delivery's own time.
    await api.db.query('update courier_endpoint_queues set retry_after_until = $2 where endpoint_id = $1', [
      ep.id,
      new Date(api.clock.now() - 1_000),
    ]);
    const [after] = (await svix.messageAttempt.listAttemptedMessages(appId, ep.id)).data;
    expect(after!.nextAttempt?.getTime()).toBe(api.clock.now());
  });
});

// Its own database: the claim and the resend below would leave deliveries due in the other tests' lists.
describe("the application's messages with where each stands (with_status)", () => {
  const parts = useApiAndReceiver();
  let api: TestApi;
  let receiver: Receiver;
  beforeAll(() => {
    ({ api, receiver } = parts);
  });

  it("counts in the application's list, with with_status=true, where each message stands at its endpoints", async () => {
    const engine = virtualWorker(api.db, { clock: api.clock });
    const appId = await createApp(api);
    const publish = async (n: string) => {
      api.clock.advance(1);
      return publishMessage(api, appId, { eventType: 'e', payload: { n } });
    };
    const early = await publish('ok'); // before any endpoint
    const endpoints = [];
    for (const path of ['a', 'b', 'deleted']) {
      endpoints.push(await createEndpoint(api, appId, { url: `${receiver.url}/${path}` }));
    }
    const [a, , deleted] = endpoints;
    const delivered = await publish('ok');
    const failed = await publish('gone');
    const retrying = await publish('retry');
    const resent = await publish('ok');
    const twice = await publish('ok');
    expect(await engine.worker.runOnce()).toBe(15);
    const resend = (msg: string) =>
      api.request('POST', `/api/v1/app/${appId}/msg/${msg}/endpoint/${a!.id}/resend`);
    // Delivered to a twice (two delivered attempts): counted once.
    expect((await resend(twice)).status).toBe(202);
    expect(await engine.worker.runOnce()).toBe(1);
    await engine.sender.close();
    const sending = await publish('ok');
    // Taken by a worker elsewhere, at every endpoint (a claim takes a few per endpoint and round).
    const lease = { owner: 'elsewhere', now: api.clock.now(), leaseMs: 60_000, limit: 10 };
    while ((await claim(api.db, lease)).deliveries.length > 0);
    // Delivered to a, then put back in its queue; still delivered to b.
    expect((await resend(resent)).status).toBe(202);
    expect((await api.request('DELETE', `/api/v1/app/${appId}/endpoint/${deleted!.id}`)).status).toBe(204);

    const counts = (success: number, pending: number, sending: number, fail: number) => ({
      success,
      pending,
      sending,
      fail,
    });
    const listed = await api.request('GET', `/api/v1/app/${appId}/msg?with_status=true&with_content=false`);
    expect(
      listed.body.data.map((m: { id: string; statusCounts: unknown }) => [m.id, m.statusCounts]),
    ).toEqual([
      [sending, counts(0, 0, 2, 0)],
      [twice, counts(2, 0, 0, 0)],
      [resent, counts(1, 1, 0, 0)],
      [retrying, counts(0, 2, 0, 0)],
      [failed, counts(0, 0, 0, 2)],
      [delivered, counts(2, 0, 0, 0)],
      [early, counts(0, 0, 0, 0)],
    ]);
    // Only when asked: Svix's list is unchanged.
    const plain = await api.request('GET', `/api/v1/app/${appId}/msg?limit=1`);
    expect(plain.body.data[0]).not.toHaveProperty('statusCounts');
    const svix = new Svix(TOKEN, { serverUrl: api.url });
    expect((await svix.message.list(appId, { limit: 1 })).data.map((m) => m.id)).toEqual([sending]);

    // status (a Courier extension) keeps those standing so at one endpoint at least, as counted,
    // paged by the same iterator.
    const standingSo = async (code: number) => {
      const found: string[] = [];
      for (let iterator = ''; ; ) {
        const page = await api.request(
          'GET',
          `/api/v1/app/${appId}/msg?status=${code}&limit=2&with_content=false${iterator && `&iterator=${iterator}`}`,
        );
        expect(page.status, page.text).toBe(200);
        found.push(...page.body.data.map((m: { id: string }) => m.id));
        if (page.body.done) return found;
        iterator = page.body.iterator;
      }
    };
    expect(await standingSo(0)).toEqual([twice, resent, delivered]);
    expect(await standingSo(1)).toEqual([resent, retrying]);
    expect(await standingSo(2)).toEqual([failed]);
    expect(await standingSo(3)).toEqual([sending]);
    const refused = await api.request('GET', `/api/v1/app/${appId}/msg?status=4`);
    expect([refused.status, locs(refused)]).toEqual([422, ['query.status']]);

    // A message that failed only at an endpoint deleted since no longer stands failed anywhere.
    const solo = await createEndpoint(api, appId, { url: `${receiver.url}/solo` });
    api.clock.advance(1);
    const soloFailed = await publishMessage(api, appId, { eventType: 'e', payload: { n: 'ok' } });
    const again = virtualWorker(api.db, { clock: api.clock });
    await again.worker.runOnce();
    await again.sender.close();
    expect(await standingSo(2)).toEqual([soloFailed, failed]);
    expect((await api.request('DELETE', `/api/v1/app/${appId}/endpoint/${solo.id}`)).status).toBe(204);
    expect(await standingSo(2)).toEqual([failed]);

    // Nor one being sent only to an endpoint deleted meanwhile (its row stays until the attempt ends).
    for (const endpoint of endpoints.slice(0, 2))
      expect((await api.request('DELETE', `/api/v1/app/${appId}/endpoint/${endpoint!.id}`)).status).toBe(204);
    const last = await createEndpoint(api, appId, { url: `${receiver.url}/last` });
    const inFlight = await publish('ok');
    while ((await claim(api.db, { ...lease, now: api.clock.now() })).deliveries.length > 0);
    expect(await standingSo(3)).toEqual([inFlight]);
    expect((await api.request('DELETE', `/api/v1/app/${appId}/endpoint/${last.id}`)).status).toBe(204);
    expect(await standingSo(3)).toEqual([]);

    // Delivered only at endpoints deleted since: no longer delivered anywhere. Delivered at its one
    // endpoint, then resent there: pending, no longer delivered (its delivered attempt stays).
    const final = await createEndpoint(api, appId, { url: `${receiver.url}/final` });
    const once = await publish('ok');
    const third = virtualWorker(api.db, { clock: api.clock });
    expect(await third.worker.runOnce()).toBe(1);
    await third.sender.close();
    expect(await standingSo(0)).toEqual([once]);
    const resentThere = await api.request(
      'POST',
      `/api/v1/app/${appId}/msg/${once}/endpoint/${final.id}/resend`,
    );
    expect(resentThere.status).toBe(202);
    expect(await standingSo(0)).toEqual([]);
    expect(await standingSo(1)).toEqual([once]);
  });
});

describe("the lists that walk the application's messages", () => {
  let api: TestApi;
  beforeAll(async () => {
    api = await startApi({ env: { COURIER_FILTER_TIMEOUT: '300ms' } });
  });
  afterAll(() => api.close());

  it("answers 422 filter_timeout when a walk takes longer than COURIER_FILTER_TIMEOUT, an endpoint's list too, and serves the next", async () => {
    const appId = await createApp(api);
    await createEndpoint(api, appId, { url: 'https://hooks.example.com/in' });
    const endpoint = await createEndpoint(api, appId, { url: 'https://hooks.example.com/other' });
    const msg = await publishMessage(api, appId);
    const list = (query: string) => api.request('GET', `/api/v1/app/${appId}/msg?${query}`);
    const sentTo = `/api/v1/app/${appId}/endpoint/${endpoint.id}/msg`;
    // A walk held up as long as it takes: the deliveries it reads are locked meanwhile.
    const [slow, slowAtEndpoint, unfiltered] = await api.db.transaction(async (tx) => {
      await tx.query('lock table courier_deliveries in access exclusive mode');
      return Promise.all([list('status=1'), api.request('GET', sentTo), list('limit=1')]);
    });
    expect(slow.status, slow.text).toBe(422);
    expect(slow.body).toEqual({
      code: 'filter_timeout',
      detail:
        'Looking for messages with status 1 (pending) at one of their endpoints took longer than COURIER_FILTER_TIMEOUT ' +
        "(300 ms), walking the application's messages: bound the list with before and after, or event_types, " +
        "or list one endpoint's messages (…/endpoint/{endpoint_id}/msg?status=).",
    });
    expect(slowAtEndpoint.body).toEqual({
      code: 'filter_timeout',
      detail:
        `Looking for the messages sent to endpoint ${endpoint.id} took longer than COURIER_FILTER_TIMEOUT (300 ms), ` +
        "walking the application's messages: bound the list with before and after, or event_types.",
    });
    expect((await api.request('GET', sentTo)).body.data.map((m: { id: string }) => m.id)).toEqual([msg]);
    // The list without the filter reads no deliveries, and is not bounded.
    expect(unfiltered.body.data.map((m: { id: string }) => m.id)).toEqual([msg]);
    expect((await list('status=1')).body.data.map((m: { id: string }) => m.id)).toEqual([msg]);
  });
});
