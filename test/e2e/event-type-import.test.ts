import { Svix } from 'svix';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp, createEndpoint, startApi, type TestApi, TOKEN } from './support.ts';

const SPEC = `
openapi: 3.1.0
info: { title: Shop, version: "1" }
webhooks:
  order.paid:
    post:
      summary: An order was paid
      requestBody:
        content:
          application/json:
            schema: { $ref: "#/components/schemas/Order" }
            example: { id: ord_1, total: 42 }
  order.refunded:
    post:
      description: An order was refunded
      deprecated: true
      x-svix-group-name: orders
components:
  schemas:
    Order:
      type: object
      properties: { id: { type: string }, total: { type: integer } }
`;

describe('event type import from OpenAPI', () => {
  let api: TestApi;
  let svix: Svix;
  beforeAll(async () => {
    api = await startApi();
    svix = new Svix(TOKEN, { serverUrl: api.url });
  });
  afterAll(() => api.close());

  const importSpec = (body: Record<string, unknown>) =>
    api.request('POST', '/api/v1/event-type/import/openapi', { body });

  it('creates and updates event types from the webhooks, archives the rest with replaceAll, and says what a dry run would do', async () => {
    await api.request('POST', '/api/v1/event-type', { body: { name: 'legacy.event', description: 'old' } });
    await api.request('POST', '/api/v1/event-type', { body: { name: 'order.paid', description: 'before' } });

    const dry = await importSpec({ specRaw: SPEC, dryRun: true, replaceAll: true });
    expect(dry.status).toBe(200);
    expect(dry.body.data).toMatchObject({ modified: [], archived: ['legacy.event'] });
    expect(dry.body.data.to_modify.map((t: { name: string }) => t.name)).toEqual([
      'order.paid',
      'order.refunded',
    ]);
    expect((await api.request('GET', '/api/v1/event-type/order.paid')).body.description).toBe('before');
    expect((await api.request('GET', '/api/v1/event-type/order.refunded')).status).toBe(404);

    // Through the official SDK, which reads to_modify.
    const done = await svix.eventType.importOpenapi({ specRaw: SPEC, replaceAll: true });
    expect(done.data.modified).toEqual(['order.paid', 'order.refunded', 'legacy.event']);
    expect(done.data.toModify?.[1]).toEqual({
      name: 'order.refunded',
      description: 'An order was refunded',
      deprecated: true,
      schemas: null,
      featureFlag: null,
      featureFlags: null,
      groupName: 'orders',
    });
    const paid = await api.request('GET', '/api/v1/event-type/order.paid');
    expect(paid.body).toMatchObject({
      description: 'An order was paid',
      archived: false,
      schemas: {
        '1': {
          type: 'object',
          properties: { id: { type: 'string' }, total: { type: 'integer' } },
          examples: [{ id: 'ord_1', total: 42 }],
        },
      },
    });
    expect((await api.request('GET', '/api/v1/event-type/legacy.event')).body.archived).toBe(true);

    // Again: nothing differs, nothing changes. The JSON form too.
    const spec = { webhooks: { 'legacy.event': { post: { summary: 'back' } } } };
    const again = await importSpec({ specRaw: SPEC });
    expect(again.body.data).toEqual({ modified: [], to_modify: [], archived: [] });
    // An archived one named again is restored.
    const restored = await importSpec({ spec });
    expect(restored.body.data.modified).toEqual(['legacy.event']);
    expect((await api.request('GET', '/api/v1/event-type/legacy.event')).body).toMatchObject({
      archived: false,
      description: 'back',
    });
  });

  it('sends the imported example with send-example', async () => {
    await importSpec({ specRaw: SPEC });
    await createApp(api, { uid: 'shop' });
    await createEndpoint(api, 'shop', { url: 'http://127.0.0.1:9/hook', uid: 'ep' });
    const sent = await api.request('POST', '/api/v1/app/shop/endpoint/ep/send-example', {
      body: { eventType: 'order.paid' },
    });
    expect(sent.status).toBe(200);
    expect(sent.body).toMatchObject({ eventType: 'order.paid', payload: { id: 'ord_1', total: 42 } });
  });

  it('refuses a body without exactly one document, or a document it cannot read, saying why', async () => {
    const answers = await Promise.all([
      importSpec({}),
      importSpec({ spec: { webhooks: {} }, specRaw: SPEC }),
      importSpec({ specRaw: 'webhooks: [' }),
      importSpec({ spec: { paths: {} } }),
      importSpec({ spec: { webhooks: { 'fine.one': { post: {} }, 'bad name': { post: {} } } } }),
    ]);
    for (const answer of answers) {
      expect(answer.status).toBe(400);
      expect(answer.body).toMatchObject({ code: 'invalid_spec', detail: expect.any(String) });
    }
    expect(answers.map((a) => a.body.detail)).toEqual([
      'Send exactly one of spec and specRaw',
      'Send exactly one of spec and specRaw',
      expect.stringMatching(/^specRaw is neither YAML nor JSON/),
      expect.stringMatching(/has no webhooks/),
      expect.stringMatching(/"bad name" is not an event type name/),
    ]);
    expect((await importSpec({ specRaw: 42 })).status).toBe(422);
  });
});
