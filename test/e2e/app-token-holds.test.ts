/**
 * A hold the operator makes (a pause or disable with the admin token) is theirs to end: an
 * application's token (a customer's, the app portal's) may not resume the endpoint, by the resume
 * route, `disabled: false` or a PUT that leaves `disabled` out, and nothing of such a refused
 * write is kept. Its own holds, and Courier's, it may end.
 */
import { ApiException, Svix } from 'svix';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { holdEndpoint } from '../../src/store/queries/endpoint-status.ts';
import {
  appPortalToken,
  createApp,
  createEndpoint,
  publishMessage,
  startApi,
  type TestApi,
  TOKEN,
} from './support.ts';

const URL = 'https://hooks.customer.example/in';
const REFUSAL = (id: string, status: string) =>
  `Endpoint ${id} is ${status}, held by the operator: only the admin token enables it again. ` +
  "An application's token changes its other settings with disabled: true in a PUT, or without disabled in a PATCH.";

describe('an endpoint the operator holds', () => {
  let api: TestApi;
  let appId: string;
  let token: string;
  let id: string;

  beforeAll(async () => {
    api = await startApi();
  });
  afterAll(() => api.close());
  beforeEach(async () => {
    appId = await createApp(api);
    token = await appPortalToken(api, appId);
    id = (await createEndpoint(api, appId, { url: URL })).id;
  });

  const path = (rest = '') => `/api/v1/app/${appId}/endpoint/${id}${rest}`;
  const asToken = (method: string, rest: string, body?: Record<string, unknown>) =>
    api.request(method, path(rest), { token, ...(body ? { body } : {}) });
  const asOperator = (method: string, rest: string, body?: Record<string, unknown>) =>
    api.request(method, path(rest), body ? { body } : {});
  const standing = async () => {
    const { body } = await asOperator('GET', '');
    return { status: body.status, heldByOperator: body.heldByOperator, description: body.description };
  };
  const heldDeliveries = async () => {
    const { rows } = await api.db.query<{ n: number }>(
      `select count(*)::int as n from courier_deliveries where endpoint_id = $1 and state = 'held'`,
      [id],
    );
    return rows[0]!.n;
  };
  const refused = (answer: { status: number; text: string; body: { code: string; detail: string } }) => {
    expect(answer.status, answer.text).toBe(403);
    expect(answer.body.code).toBe('endpoint_held_by_operator');
    return answer.body.detail;
  };

  it("keeps an operator's pause from the token's resume, disabled: false and a PUT without disabled", async () => {
    expect((await asOperator('POST', '/pause')).body).toMatchObject({
      status: 'paused',
      heldByOperator: true,
    });
    await publishMessage(api, appId);
    expect(await heldDeliveries()).toBe(1);

    expect(refused(await asToken('POST', '/resume'))).toBe(REFUSAL(id, 'paused'));
    expect(refused(await asToken('PATCH', '', { disabled: false, description: 'kept out' }))).toBe(
      REFUSAL(id, 'paused'),
    );
    // The official SDK's update is a PUT, and sends no disabled unless told.
    const customer = new Svix(token, { serverUrl: api.url });
    const sdk = await customer.endpoint.update(appId, id, { url: URL, description: 'kept out' }).then(
      () => 'answered',
      (error) => (error instanceof ApiException ? error.code : error),
    );
    expect(sdk).toBe(403);
    // Nothing of the refused writes is kept, and the delivery is still held.
    expect(await standing()).toEqual({ status: 'paused', heldByOperator: true, description: '' });
    expect(await heldDeliveries()).toBe(1);

    // Its other settings the token changes as the refusal says; its pause changes nothing.
    const patched = await asToken('PATCH', '', { description: 'patched' });
    expect(patched.status, patched.text).toBe(200);
    expect((await asToken('POST', '/pause')).body).toMatchObject({ status: 'paused', heldByOperator: true });
    await customer.endpoint.update(appId, id, { url: URL, description: 'put', disabled: true });
    // disabled: true leaves the hold as the operator made it: paused, new messages still kept for it.
    expect(await standing()).toEqual({ status: 'paused', heldByOperator: true, description: 'put' });
    await publishMessage(api, appId);
    expect(await heldDeliveries()).toBe(2);
    // The operator's disable stays theirs, and says so where no reason is given.
    expect((await asOperator('PATCH', '', { disabled: true })).body).toMatchObject({
      status: 'disabled',
      disabledReason: 'disabled by the operator',
    });
    expect(refused(await asToken('POST', '/resume'))).toBe(REFUSAL(id, 'disabled'));

    expect((await asOperator('POST', '/resume')).body).toMatchObject({
      status: 'enabled',
      heldByOperator: false,
    });
    expect(await heldDeliveries()).toBe(0);
  });

  it('holds for the operator an endpoint they make disabled, by POST or by a PUT naming a new uid', async () => {
    const made = await api.request('POST', `/api/v1/app/${appId}/endpoint`, {
      body: { url: URL, disabled: true },
    });
    const put = await api.request('PUT', `/api/v1/app/${appId}/endpoint/made-off`, {
      body: { url: URL, disabled: true },
    });
    const byToken = await api.request('POST', `/api/v1/app/${appId}/endpoint`, {
      token,
      body: { url: URL, disabled: true },
    });
    for (const answer of [made, put, byToken]) expect(answer.status, answer.text).toBe(201);
    for (const answer of [made, put])
      expect(answer.body).toMatchObject({
        status: 'disabled',
        heldByOperator: true,
        disabledReason: 'disabled by the operator',
      });
    expect(byToken.body).toMatchObject({ heldByOperator: false, disabledReason: 'disabled by its owner' });

    const resume = (endpoint: string) =>
      api.request('POST', `/api/v1/app/${appId}/endpoint/${endpoint}/resume`, { token });
    refused(await resume(made.body.id));
    refused(await resume('made-off'));
    expect((await resume(byToken.body.id)).body).toMatchObject({ status: 'enabled' });
  });

  /** The operational events recorded for this test's endpoint, oldest first, by type. */
  const eventsOfEndpoint = async () => {
    const types: string[] = [];
    let iterator = '';
    for (;;) {
      const { body } = await api.request('GET', `/api/v1/operational-event?limit=100${iterator}`);
      for (const event of body.data) if (event.data.endpointId === id) types.push(event.type);
      if (body.done) return types;
      iterator = `&iterator=${body.iterator}`;
    }
  };

  it("lets the token end its own hold, until the operator's pause or disable makes it theirs", async () => {
    expect((await asToken('POST', '/pause')).body).toMatchObject({ status: 'paused', heldByOperator: false });
    expect((await asToken('POST', '/resume')).body).toMatchObject({
      status: 'enabled',
      heldByOperator: false,
    });

    expect((await asToken('PATCH', '', { disabled: true })).body).toMatchObject({
      status: 'disabled',
      disabledReason: 'disabled by its owner',
      heldByOperator: false,
    });
    // Already disabled: the operator's disable changes its status nothing, and takes the hold.
    expect((await asOperator('PATCH', '', { disabled: true })).body).toMatchObject({
      status: 'disabled',
      disabledReason: 'disabled by the operator',
      heldByOperator: true,
    });
    refused(await asToken('POST', '/resume'));
    expect((await asOperator('POST', '/resume')).body).toMatchObject({ status: 'enabled' });

    expect((await asToken('POST', '/pause')).body).toMatchObject({ heldByOperator: false });
    expect((await asOperator('POST', '/pause')).body).toMatchObject({
      status: 'paused',
      disabledReason: 'paused through the API',
      heldByOperator: true,
    });
    refused(await asToken('PATCH', '', { disabled: false }));

    // Each takeover is told once to what follows the operational events: the pause's as an update,
    // the PATCH's in its own update; the operator's pause of their own hold tells nothing.
    expect((await asOperator('POST', '/pause')).status).toBe(200);
    expect(await eventsOfEndpoint()).toEqual([
      'endpoint.created',
      'endpoint.paused',
      'endpoint.enabled',
      'endpoint.updated',
      'endpoint.disabled',
      'endpoint.updated',
      'endpoint.enabled',
      'endpoint.paused',
      'endpoint.updated',
    ]);
  });

  it("lets the token resume what Courier held, until the operator's pause takes the hold", async () => {
    const courierPauses = () =>
      api.db.transaction((tx) =>
        holdEndpoint(tx, id, 'paused', 'paused after 5 consecutive permanent failures', api.clock.now()),
      );
    // Courier's own hold (a streak's pause) is the customer's to end, once the receiver is fixed.
    expect(await courierPauses()).toBe(true);
    expect((await asToken('POST', '/resume')).body).toMatchObject({
      status: 'enabled',
      heldByOperator: false,
    });

    expect(await courierPauses()).toBe(true);
    expect((await asOperator('POST', '/pause')).body).toMatchObject({
      status: 'paused',
      disabledReason: 'paused after 5 consecutive permanent failures',
      heldByOperator: true,
    });
    refused(await asToken('POST', '/resume'));
    expect((await asOperator('POST', '/resume')).body).toMatchObject({ status: 'enabled' });
  });

  it("makes each hold anew: after an operator's hold ended, the token's next pause is its own", async () => {
    // The resume leaves the flag, as the previous release's does; the hold from enabled sets it anew.
    expect((await asOperator('POST', '/pause')).body).toMatchObject({ heldByOperator: true });
    expect((await asOperator('POST', '/resume')).body).toMatchObject({
      status: 'enabled',
      heldByOperator: false,
    });
    expect((await asToken('POST', '/pause')).body).toMatchObject({ status: 'paused', heldByOperator: false });
    expect((await asToken('POST', '/resume')).body).toMatchObject({ status: 'enabled' });
  });

  it('answers the operator as before: their write ends any hold', async () => {
    const admin = new Svix(TOKEN, { serverUrl: api.url });
    await asToken('POST', '/pause');
    // The SDK's update, a PUT without disabled, enables it, as Svix's does.
    await admin.endpoint.update(appId, id, { url: URL });
    expect(await standing()).toMatchObject({ status: 'enabled', heldByOperator: false });
  });
});
