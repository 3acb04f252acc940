import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { holdOpen, waitingBehind } from '../support/transactions.ts';
import { createApp, locs, startApi, type TestApi } from './support.ts';

describe('event types', () => {
  let api: TestApi;
  beforeAll(async () => {
    api = await startApi();
  });
  afterAll(() => api.close());

  it('creates, reads, updates, patches, archives and expunges', async () => {
    const schemas = { '1': { type: 'object', properties: { id: { type: 'string' } } } };
    const created = await api.request('POST', '/api/v1/event-type', {
      body: { name: 'invoice.paid', description: 'An invoice was paid', schemas, featureFlag: null },
    });
    expect(created.status).toBe(201);
    expect(created.body).toEqual({
      name: 'invoice.paid',
      description: 'An invoice was paid',
      archived: false,
      deprecated: false,
      schemas,
      featureFlags: null,
      featureFlag: null,
      createdAt: '2026-01-01T12:00:00.000Z',
      updatedAt: '2026-01-01T12:00:00.000Z',
    });
    expect((await api.request('GET', '/api/v1/event-type/invoice.paid')).body).toEqual(created.body);
    expect(
      (await api.request('POST', '/api/v1/event-type', { body: { name: 'invoice.paid', description: 'x' } }))
        .status,
    ).toBe(409);

    const patched = await api.request('PATCH', '/api/v1/event-type/invoice.paid', {
      body: { deprecated: true },
    });
    expect(patched.body).toMatchObject({ deprecated: true, description: 'An invoice was paid', schemas });
    const put = await api.request('PUT', '/api/v1/event-type/invoice.paid', {
      body: { description: 'replaced' },
    });
    expect(put.status).toBe(200);
    expect(put.body).toMatchObject({ description: 'replaced', deprecated: false, schemas: null });

    expect((await api.request('DELETE', '/api/v1/event-type/invoice.paid')).status).toBe(204);
    expect((await api.request('GET', '/api/v1/event-type/invoice.paid')).body.archived).toBe(true);
    // Creating it again restores it.
    const restored = await api.request('POST', '/api/v1/event-type', {
      body: { name: 'invoice.paid', description: 'back' },
    });
    expect(restored.status).toBe(201);
    expect(restored.body).toMatchObject({ archived: false, description: 'back' });

    expect((await api.request('DELETE', '/api/v1/event-type/invoice.paid?expunge=true')).status).toBe(204);
    expect((await api.request('GET', '/api/v1/event-type/invoice.paid')).status).toBe(404);
    const upsert = await api.request('PUT', '/api/v1/event-type/made.by.put', {
      body: { description: 'new' },
    });
    expect(upsert.status).toBe(201);
  });

  it('lists by name, hiding archived ones and schemas unless asked', async () => {
    for (const name of ['b.two', 'a.one', 'c.three']) {
      await api.request('POST', '/api/v1/event-type', {
        body: { name, description: name, schemas: { '1': {} } },
      });
    }
    await api.request('DELETE', '/api/v1/event-type/c.three');
    const list = await api.request('GET', '/api/v1/event-type?limit=2');
    expect(list.body.data.map((e: { name: string }) => e.name)).toEqual(['a.one', 'b.two']);
    expect(list.body.data[0].schemas).toBeNull();
    const rest = await api.request('GET', `/api/v1/event-type?limit=2&iterator=${list.body.iterator}`);
    expect(rest.body.data.map((e: { name: string }) => e.name)).toEqual(['made.by.put']);
    const all = await api.request('GET', '/api/v1/event-type?include_archived=true&with_content=true');
    expect(all.body.data.map((e: { name: string }) => e.name)).toEqual([
      'a.one',
      'b.two',
      'c.three',
      'made.by.put',
    ]);
    expect(all.body.data[0].schemas).toEqual({ '1': {} });
  });

  it('validates names and bodies; messages do not need an event type', async () => {
    expect(
      locs(await api.request('POST', '/api/v1/event-type', { body: { name: 'bad name', description: '' } })),
    ).toEqual(['body.name']);
    // A leading - would read as "the page before" when the name is a list iterator; . and .. vanish from paths.
    for (const name of ['-a', '.', '..']) {
      const refused = await api.request('POST', '/api/v1/event-type', { body: { name, description: '' } });
      expect(locs(refused), name).toEqual(['body.name']);
    }
    expect(
      (await api.request('POST', '/api/v1/event-type', { body: { name: 'a-.b', description: '' } })).status,
    ).toBe(201);
    expect(locs(await api.request('PUT', '/api/v1/event-type/-b', { body: { description: '' } }))).toEqual([
      'path.event_type_name',
    ]);
    expect(locs(await api.request('POST', '/api/v1/event-type', { body: { name: 'x' } }))).toEqual([
      'body.description',
    ]);
    expect(
      locs(
        await api.request('POST', '/api/v1/event-type', {
          body: { name: 'x', description: '', schemas: [] },
        }),
      ),
    ).toEqual(['body.schemas']);
    expect((await api.request('GET', '/api/v1/event-type/missing')).status).toBe(404);
    expect((await api.request('PATCH', '/api/v1/event-type/missing', { body: {} })).status).toBe(404);
    const appId = await createApp(api);
    const msg = await api.request('POST', `/api/v1/app/${appId}/msg`, {
      body: { eventType: 'never.declared', payload: {} },
    });
    expect(msg.status).toBe(202);
  });

  it('keeps both of a PATCH and an archive that race: each is computed from the row as the other left it', async () => {
    await api.request('POST', '/api/v1/event-type', { body: { name: 'race.both', description: 'before' } });
    // A transaction holds the row while both requests arrive; they queue on it.
    const held = await holdOpen(api.db, (tx) =>
      tx.query(`select 1 from courier_event_types where name = 'race.both' for update`),
    );
    const requests = [
      api.request('PATCH', '/api/v1/event-type/race.both', { body: { description: 'after' } }),
      api.request('DELETE', '/api/v1/event-type/race.both'),
    ];
    try {
      await waitingBehind(api.db, held.pid, requests.length);
    } finally {
      await held.commit();
      await Promise.allSettled(requests);
    }
    expect((await Promise.all(requests)).map((r) => r.status).sort()).toEqual([200, 204]);
    const now = await api.request('GET', '/api/v1/event-type/race.both');
    expect(now.body).toMatchObject({ description: 'after', archived: true });
  });
});
