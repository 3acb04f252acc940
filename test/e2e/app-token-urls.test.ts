/**
 * An endpoint URL set with an application's token (by a customer) reaches public addresses only
 * (`publicOnly`): COURIER_ALLOW_PRIVATE_NETWORKS opens the operator's internal networks to the
 * operator's endpoints alone. Checked when the URL is saved (a literal address) and when it is sent
 * to (what a host name resolves to); the admin token opens it, or sends a URL of its own.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { Sender } from '../../src/delivery/sender.ts';
import { type Resolver, SsrfGuard } from '../../src/delivery/ssrf-guard.ts';
import { type Receiver, startReceiver } from '../delivery/receiver.ts';
import { virtualWorker } from '../support/engine.ts';
import {
  appPortalToken,
  createApp,
  createEndpoint,
  locs,
  publishMessage,
  startApi,
  type TestApi,
} from './support.ts';

const PUBLIC_ONLY =
  "this endpoint is public-only (publicOnly: its URL set with an application's token, or so set by the admin token), so COURIER_ALLOW_PRIVATE_NETWORKS does not apply to it";

describe("endpoint URLs set with an application's token", () => {
  let api: TestApi;
  let receiver: Receiver;
  let engine: ReturnType<typeof virtualWorker>;
  let appId: string;
  let token: string;
  /** A host name for the receiver: accepted when saved, checked when it resolves. */
  let named: string;

  beforeAll(async () => {
    api = await startApi();
    receiver = await startReceiver((_req, res) => res.writeHead(204).end());
    named = `http://hooks.customer.test:${receiver.port}/hook`;
    const lookup: Resolver = (_host, _options, callback) =>
      queueMicrotask(() => callback(null, [{ address: '127.0.0.1', family: 4 }]));
    const sender = new Sender({ guard: new SsrfGuard(['127.0.0.0/8']), clock: api.clock, lookup });
    engine = virtualWorker(api.db, { clock: api.clock, sender });
  });
  afterAll(async () => {
    await engine.sender.close();
    await receiver.close();
    await api.close();
  });
  beforeEach(async () => {
    appId = await createApp(api);
    token = await appPortalToken(api, appId);
  });

  const endpoints = async () =>
    (await api.request('GET', `/api/v1/app/${appId}/endpoint`)).body.data as { id: string; url: string }[];
  const attemptsOf = async (endpointId: string) =>
    (await api.request('GET', `/api/v1/app/${appId}/attempt/endpoint/${endpointId}`)).body.data as {
      status: number;
      detail: string;
    }[];

  it('refuses an allow-listed literal address from the token on every write, and leaves nothing behind', async () => {
    const literal = `${receiver.url}/hook`;
    const made = await api.request('POST', `/api/v1/app/${appId}/endpoint`, {
      token,
      body: { url: literal },
    });
    expect(made.status).toBe(422);
    expect(locs(made)).toEqual(['body.url']);
    expect(made.body.detail[0].msg).toBe(`refused: 127.0.0.1 is a loopback address; ${PUBLIC_ONLY}`);
    const put = await api.request('PUT', `/api/v1/app/${appId}/endpoint/by-uid`, {
      token,
      body: { url: literal },
    });
    expect(put.status).toBe(422);
    expect(await endpoints()).toEqual([]);

    const mine = await api.request('POST', `/api/v1/app/${appId}/endpoint`, { token, body: { url: named } });
    expect(mine.status, mine.text).toBe(201);
    const moved = await api.request('PATCH', `/api/v1/app/${appId}/endpoint/${mine.body.id}`, {
      token,
      body: { url: literal },
    });
    expect(moved.status).toBe(422);
    expect((await endpoints()).map((e) => e.url)).toEqual([named]);
    // The admin token sets the same address.
    expect((await createEndpoint(api, appId, { url: literal })).url).toBe(literal);
  });

  it('refuses at delivery what the host name resolves to, until the admin token opens it', async () => {
    const made = await api.request('POST', `/api/v1/app/${appId}/endpoint`, { token, body: { url: named } });
    expect(made.status, made.text).toBe(201);
    expect(made.body.publicOnly).toBe(true);
    const endpointId = made.body.id;
    const msgId = await publishMessage(api, appId);
    await engine.worker.runOnce();
    expect(receiver.requests).toHaveLength(0);
    const [refused] = await attemptsOf(endpointId);
    expect(refused?.status).toBe(2);
    expect(refused?.detail).toContain(
      `refused: hooks.customer.test resolves to an address which is a loopback address; ${PUBLIC_ONLY}`,
    );

    // Writes that do not open it keep it closed: the admin token's PUT of the same URL too.
    for (const [method, path, body, as] of [
      ['PATCH', '', { description: 'by the admin' }, undefined],
      ['PUT', '', { url: named, description: 'the same URL, by the admin' }, undefined],
      ['PATCH', '/headers', { headers: { 'x-tenant': 'a' } }, undefined],
      ['PATCH', '/headers', { headers: { 'x-tenant': 'b' } }, token],
      ['PATCH', '', { description: 'by the customer', publicOnly: true }, token],
      ['PUT', '', { url: named }, token],
    ] as const) {
      const res = await api.request(method, `/api/v1/app/${appId}/endpoint/${endpointId}${path}`, {
        token: as,
        body,
      });
      expect(res.status, `${method} ${path}: ${res.text}`).toBeLessThan(300);
      const now = await api.request('GET', `/api/v1/app/${appId}/endpoint/${endpointId}`);
      expect(now.body.publicOnly, `${method} ${path}`).toBe(true);
    }
    const closed = await api.request('PATCH', `/api/v1/app/${appId}/endpoint/${endpointId}`, {
      token,
      body: { publicOnly: false },
    });
    expect(closed.status).toBe(422);
    expect(locs(closed)).toEqual(['body.publicOnly']);
    await publishMessage(api, appId);
    await engine.worker.runOnce();
    expect(receiver.requests).toHaveLength(0);
    expect(await attemptsOf(endpointId)).toHaveLength(2);

    // The admin token opens it; a resend then goes out.
    const opened = await api.request('PATCH', `/api/v1/app/${appId}/endpoint/${endpointId}`, {
      body: { publicOnly: false },
    });
    expect(opened.status, opened.text).toBe(200);
    expect(opened.body.publicOnly).toBe(false);
    const resend = await api.request(
      'POST',
      `/api/v1/app/${appId}/msg/${msgId}/endpoint/${endpointId}/resend`,
    );
    expect(resend.status, resend.text).toBe(202);
    await engine.worker.runOnce();
    expect(receiver.requests).toHaveLength(1);
    receiver.requests.length = 0;

    // The token sending the URL the endpoint has, or leaving it out, keeps it open.
    for (const [method, body] of [
      ['PUT', { url: named, description: 'kept', publicOnly: false }],
      ['PATCH', { description: 'patched' }],
    ] as const) {
      const res = await api.request(method, `/api/v1/app/${appId}/endpoint/${endpointId}`, { token, body });
      expect(res.status, res.text).toBe(200);
      expect(res.body.publicOnly).toBe(false);
    }
    await publishMessage(api, appId);
    await engine.worker.runOnce();
    expect(receiver.requests).toHaveLength(1);
    receiver.requests.length = 0;

    // A new URL from the token closes it again; the token cannot say otherwise.
    const elsewhere = named.replace('/hook', '/moved');
    const refusedMove = await api.request('PATCH', `/api/v1/app/${appId}/endpoint/${endpointId}`, {
      token,
      body: { url: elsewhere, publicOnly: false },
    });
    expect(refusedMove.status).toBe(422);
    const moved = await api.request('PATCH', `/api/v1/app/${appId}/endpoint/${endpointId}`, {
      token,
      body: { url: elsewhere },
    });
    expect(moved.status, moved.text).toBe(200);
    expect(moved.body.publicOnly).toBe(true);
    await publishMessage(api, appId);
    await engine.worker.runOnce();
    expect(receiver.requests).toHaveLength(0);
    expect((await attemptsOf(endpointId))[0]?.detail).toContain(PUBLIC_ONLY);

    // A new URL from the admin token is the operator's.
    const back = await api.request('PATCH', `/api/v1/app/${appId}/endpoint/${endpointId}`, {
      body: { url: named },
    });
    expect(back.body.publicOnly).toBe(false);
    await publishMessage(api, appId);
    await engine.worker.runOnce();
    expect(receiver.requests).toHaveLength(1);
    receiver.requests.length = 0;
  });

  it('closes an endpoint a token makes by uid with PUT, and one the admin token says so of', async () => {
    const byUid = await api.request('PUT', `/api/v1/app/${appId}/endpoint/portal-made`, {
      token,
      body: { url: named },
    });
    expect(byUid.status, byUid.text).toBe(201);
    expect(byUid.body.publicOnly).toBe(true);
    const literal = await createEndpoint(api, appId, { url: `${receiver.url}/operator` });
    const refused = await api.request('PATCH', `/api/v1/app/${appId}/endpoint/${literal.id}`, {
      body: { publicOnly: true },
    });
    expect(refused.status).toBe(422);
    expect(locs(refused)).toEqual(['body.url']);
    const own = await createEndpoint(api, appId, { url: named.replace('/hook', '/own'), publicOnly: true });
    expect(own.publicOnly).toBe(true);
    // The token may close one the operator opened.
    const opened = await createEndpoint(api, appId, { url: named.replace('/hook', '/opened') });
    const closing = await api.request('PATCH', `/api/v1/app/${appId}/endpoint/${opened.id}`, {
      token,
      body: { publicOnly: true },
    });
    expect(closing.body.publicOnly).toBe(true);
    await publishMessage(api, appId);
    await engine.worker.runOnce();
    // The operator's literal address alone is delivered to.
    expect(receiver.requests.map((r) => r.url)).toEqual(['/operator']);
    receiver.requests.length = 0;
  });

  it("keeps the operator's literal address when the token sends it back unchanged", async () => {
    const literal = `${receiver.url}/operator`;
    const { id } = await createEndpoint(api, appId, { url: literal });
    const res = await api.request('PUT', `/api/v1/app/${appId}/endpoint/${id}`, {
      token,
      body: { url: literal, description: 'from the portal' },
    });
    expect(res.status, res.text).toBe(200);
    await publishMessage(api, appId);
    await engine.worker.runOnce();
    expect(receiver.requests.map((r) => r.url)).toEqual(['/operator']);
    receiver.requests.length = 0;
  });
});
