import { Svix } from 'svix';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApi, type TestApi, TOKEN } from './support.ts';

describe('environment export and import', () => {
  let source: TestApi;
  let target: TestApi;
  beforeAll(async () => {
    [source, target] = await Promise.all([startApi(), startApi()]);
  });
  afterAll(async () => {
    await Promise.all([source.close(), target.close()]);
  });

  it('copies the event types, archived ones too, from one installation to another', async () => {
    const schemas = { '1': { type: 'object', examples: [{ id: 1 }] } };
    await source.request('POST', '/api/v1/event-type', {
      body: { name: 'invoice.paid', description: 'Paid', schemas, deprecated: true },
    });
    await source.request('POST', '/api/v1/event-type', { body: { name: 'invoice.old', description: 'Old' } });
    await source.request('DELETE', '/api/v1/event-type/invoice.old');
    await target.request('POST', '/api/v1/event-type', {
      body: { name: 'invoice.paid', description: 'stale' },
    });
    await target.request('POST', '/api/v1/event-type', { body: { name: 'local.only', description: 'kept' } });

    // Through the official SDK both ways.
    const exported = await new Svix(TOKEN, { serverUrl: source.url }).environment.export();
    expect(exported).toMatchObject({ connectors: [], settings: null, version: 1 });
    expect(exported.eventTypes.map((e) => [e.name, e.archived])).toEqual([
      ['invoice.old', true],
      ['invoice.paid', false],
    ]);
    await new Svix(TOKEN, { serverUrl: target.url }).environment.import(exported);

    const list = await target.request('GET', '/api/v1/event-type?include_archived=true&with_content=true');
    expect(
      list.body.data.map((e: Record<string, unknown>) => [
        e.name,
        e.description,
        e.archived,
        e.deprecated,
        e.schemas,
      ]),
    ).toEqual([
      ['invoice.old', 'Old', true, false, null],
      ['invoice.paid', 'Paid', false, true, schemas],
      ['local.only', 'kept', false, false, null],
    ]);
  });

  it('takes an export file as it is, and refuses what it cannot write, writing nothing', async () => {
    const file = (await source.request('POST', '/api/v1/environment/export')).body;
    expect(file.eventTypes[0]).toHaveProperty('createdAt');
    const again = await target.request('POST', '/api/v1/environment/import', {
      body: { ...file, settings: { colorPaletteDark: {} }, connectors: [{ name: 'x' }] },
    });
    expect(again.status).toBe(204);

    const before = (await target.request('GET', '/api/v1/event-type?include_archived=true')).body.data;
    const [twice, badName, tooMany] = await Promise.all([
      target.request('POST', '/api/v1/environment/import', {
        body: {
          eventTypes: [
            { name: 'new.one', description: 'a' },
            { name: 'new.one', description: 'b' },
          ],
        },
      }),
      target.request('POST', '/api/v1/environment/import', {
        body: {
          eventTypes: [
            { name: 'fine.two', description: 'a' },
            { name: 'bad name', description: 'b' },
          ],
        },
      }),
      target.request('POST', '/api/v1/environment/import', {
        body: { eventTypes: Array.from({ length: 1001 }, (_, i) => ({ name: `t${i}`, description: '' })) },
      }),
    ]);
    for (const refused of [twice, badName, tooMany]) expect(refused.status).toBe(422);
    expect(twice.body.detail[0]).toMatchObject({ loc: ['body', 'eventTypes', '1', 'name'] });
    expect((await target.request('GET', '/api/v1/event-type?include_archived=true')).body.data).toEqual(
      before,
    );
  });
});
