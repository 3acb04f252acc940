import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { purgeExpiredIdempotencyKeys } from '../../src/store/repos/idempotency.ts';
import { createApp, createEndpoint, locs, startApi, type TestApi } from './support.ts';

describe('messages', () => {
  let api: TestApi;
  let appId: string;
  beforeAll(async () => {
    api = await startApi();
    appId = await createApp(api, { uid: 'msg-app' });
    await createEndpoint(api, appId, { url: 'https://example.com/all' });
    await createEndpoint(api, appId, { url: 'https://example.com/paid', filterTypes: ['invoice.paid'] });
  });
  afterAll(() => api.close());

  const msgs = () => `/api/v1/app/${appId}/msg`;
  const count = async () =>
    (
      await api.db.query<{ n: number }>('select count(*)::int as n from courier_messages where app_id = $1', [
        appId,
      ])
    ).rows[0]!.n;

  it('publishes (202), stores the exact bytes and schedules one delivery per matching endpoint', async () => {
    const payload = { id: 7, nested: { ok: true, list: [1, 'two'] }, unicode: 'é☃' };
    const res = await api.request('POST', '/api/v1/app/msg-app/msg', {
      body: { eventType: 'invoice.paid', payload, eventId: 'evt-1', channels: ['eu'], tags: ['t1'] },
    });
    expect(res.status).toBe(202);
    expect(res.body).toEqual({
      id: expect.stringMatching(/^msg_[0-9A-Z]{26}$/),
      eventId: 'evt-1',
      eventType: 'invoice.paid',
      payload,
      channels: ['eu'],
      tags: ['t1'],
      timestamp: '2026-01-01T12:00:00.000Z',
      expungedAt: null,
      payloadExpiresAt: null,
    });
    const { rows } = await api.db.query<{ payload: Buffer }>(
      'select payload from courier_messages where id = $1',
      [res.body.id],
    );
    expect(Buffer.from(rows[0]!.payload).toString('utf8')).toBe(JSON.stringify(payload));
    const deliveries = await api.db.query('select * from courier_deliveries where message_id = $1', [
      res.body.id,
    ]);
    expect(deliveries.rows).toHaveLength(2);

    const other = await api.request('POST', msgs(), { body: { eventType: 'user.created', payload: {} } });
    const some = await api.db.query('select * from courier_deliveries where message_id = $1', [
      other.body.id,
    ]);
    expect(some.rows).toHaveLength(1);

    expect((await api.request('GET', `${msgs()}/${res.body.id}`)).body).toEqual(res.body);
    expect((await api.request('GET', `${msgs()}/evt-1`)).body.id).toBe(res.body.id);
    expect((await api.request('GET', `${msgs()}/evt-1?with_content=false`)).body.payload).toEqual({});
    expect((await api.request('GET', `${msgs()}/missing`)).status).toBe(404);
  });

  it('refuses a duplicate eventId with 409', async () => {
    await api.request('POST', msgs(), { body: { eventType: 'a', payload: {}, eventId: 'dup-1' } });
    const before = await count();
    const dup = await api.request('POST', msgs(), {
      body: { eventType: 'a', payload: { other: 1 }, eventId: 'dup-1' },
    });
    expect(dup.status).toBe(409);
    expect(dup.body).toEqual({ code: 'conflict', detail: expect.stringContaining('dup-1') });
    expect(await count()).toBe(before);
  });

  it('with_content=false answers payload {}', async () => {
    const res = await api.request('POST', `${msgs()}?with_content=false`, {
      body: { eventType: 'a', payload: { x: 1 } },
    });
    expect(res.status).toBe(202);
    expect(res.body.payload).toEqual({});
    expect((await api.request('GET', `${msgs()}/${res.body.id}`)).body.payload).toEqual({ x: 1 });
  });

  it('validates the message', async () => {
    const stored = async () =>
      (await api.db.query<{ n: number }>('select count(*)::int as n from courier_messages')).rows[0]!.n;
    const before = await stored();
    const cases: [unknown, string[]][] = [
      [{ eventType: 'a', payload: [1, 2] }, ['body.payload']],
      [{ eventType: 'a', payload: 'text' }, ['body.payload']],
      [{ eventType: 'a' }, ['body.payload']],
      [{ payload: {} }, ['body.eventType']],
      [{ eventType: 'has space', payload: {} }, ['body.eventType']],
      [{ eventType: 'a', payload: {}, eventId: 'x/y' }, ['body.eventId']],
      // Scheduled delivery is refused rather than delivered at once.
      [{ eventType: 'a', payload: {}, deliverAt: '2030-01-01T00:00:00Z' }, ['body.deliverAt']],
      // What Courier does not do, every such field in one answer.
      [
        {
          eventType: 'a',
          payload: {},
          deliverAt: '2030-01-01T00:00:00Z',
          transformationsParams: { rawPayload: 'a,b' },
          tags: ['courier.example'],
          payloadRetentionPeriod: 30,
          payloadRetentionHours: 24,
        },
        [
          'body.deliverAt',
          'body.transformationsParams.rawPayload',
          'body.tags',
          'body.payloadRetentionHours',
        ],
      ],
      [
        {
          eventType: 'a',
          payload: {},
          channels: Array(11)
            .fill('c')
            .map((c, i) => c + i),
        },
        ['body.channels'],
      ],
    ];
    for (const [body, expected] of cases) {
      const res = await api.request('POST', msgs(), { body });
      expect(res.status, JSON.stringify(body)).toBe(422);
      expect(locs(res), JSON.stringify(body)).toEqual(expected);
    }
    expect(
      (await api.request('POST', '/api/v1/app/nope/msg', { body: { eventType: 'a', payload: {} } })).status,
    ).toBe(404);
    expect(await stored()).toBe(before);
    const unscheduled = { eventType: 'a', payload: {}, deliverAt: null, payloadRetentionPeriod: 90 };
    expect((await api.request('POST', msgs(), { body: unscheduled })).status).toBe(202);
  });

  it('an idempotent POST replayed returns the same message and creates one', async () => {
    const before = await count();
    const body = { eventType: 'order.created', payload: { order: 1 } };
    const headers = { 'idempotency-key': 'key-replay-1' };
    const first = await api.request('POST', msgs(), { body, headers });
    const second = await api.request('POST', msgs(), { body, headers });
    expect(first.status).toBe(202);
    expect(second.status).toBe(202);
    expect(second.body).toEqual(first.body);
    expect(second.headers.get('idempotent-replayed')).toBe('true');
    expect(await count()).toBe(before + 1);

    // Key order does not matter; another body does.
    const reordered = await api.request('POST', msgs(), {
      raw: '{"payload":{"order":1},"eventType":"order.created"}',
      headers: { ...headers, 'content-type': 'application/json' },
    });
    expect(reordered.body.id).toBe(first.body.id);
    const changed = await api.request('POST', msgs(), { body: { ...body, payload: { order: 2 } }, headers });
    expect(changed.status).toBe(422);
    expect(changed.body.code).toBe('idempotency_key_mismatch');
    // Keys are per path: the same key elsewhere is another request.
    const elsewhere = await api.request('POST', '/api/v1/app', { body: { name: 'k' }, headers });
    expect(elsewhere.status).toBe(201);
    expect(await count()).toBe(before + 1);
  });

  it('concurrent repeats with one key create one message', async () => {
    const before = await count();
    const body = { eventType: 'burst', payload: { n: 1 } };
    const answers = await Promise.all(
      Array.from({ length: 8 }, () =>
        api.request('POST', msgs(), { body, headers: { 'idempotency-key': 'burst-key' } }),
      ),
    );
    expect(answers.map((a) => a.status)).toEqual(Array(8).fill(202));
    expect(new Set(answers.map((a) => a.body.id)).size).toBe(1);
    expect(await count()).toBe(before + 1);
  });

  it('stores 4xx answers too, but not the failures worth retrying', async () => {
    const headers = { 'idempotency-key': 'key-404' };
    const missing = await api.request('POST', '/api/v1/app/not-yet/msg', {
      body: { eventType: 'a', payload: {} },
      headers,
    });
    expect(missing.status).toBe(404);
    const again = await api.request('POST', '/api/v1/app/not-yet/msg', {
      body: { eventType: 'a', payload: {} },
      headers,
    });
    expect(again.status).toBe(404);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    // Validation happens before the key is taken: fixing the body with the same key works.
    const invalid = await api.request('POST', msgs(), {
      body: { eventType: 'a' },
      headers: { 'idempotency-key': 'k-v' },
    });
    expect(invalid.status).toBe(422);
    const fixed = await api.request('POST', msgs(), {
      body: { eventType: 'a', payload: {} },
      headers: { 'idempotency-key': 'k-v' },
    });
    expect(fixed.status).toBe(202);
  });

  it('expires idempotency keys after 24 hours', async () => {
    const body = { eventType: 'daily', payload: {} };
    const headers = { 'idempotency-key': 'key-ttl' };
    const first = await api.request('POST', msgs(), { body, headers });
    api.clock.advance(24 * 3600_000 + 1);
    const later = await api.request('POST', msgs(), { body, headers });
    expect(later.status).toBe(202);
    expect(later.body.id).not.toBe(first.body.id);

    await api.request('POST', msgs(), { body, headers: { 'idempotency-key': 'key-purged' } });
    const stored = "select count(*)::int as n from courier_idempotency_keys where key = 'key-purged'";
    expect((await api.db.query<{ n: number }>(stored)).rows[0]!.n).toBe(1);
    // The keys of the earlier tests are now over 24 hours old: purged; this one is not yet.
    expect(await purgeExpiredIdempotencyKeys(api.db, api.clock.now(), 1000)).toBeGreaterThan(0);
    expect((await api.db.query<{ n: number }>(stored)).rows[0]!.n).toBe(1);
    await purgeExpiredIdempotencyKeys(api.db, api.clock.now() + 24 * 3600_000, 1000);
    expect((await api.db.query<{ n: number }>(stored)).rows[0]!.n).toBe(0);
  });
});

describe('message lists', () => {
  let api: TestApi;
  let appId: string;
  const ids: string[] = [];
  beforeAll(async () => {
    api = await startApi();
    appId = await createApp(api);
    for (let i = 0; i < 6; i++) {
      api.clock.advance(1000);
      const res = await api.request('POST', `/api/v1/app/${appId}/msg`, {
        body: {
          eventType: i % 2 ? 'odd' : 'even',
          payload: { i },
          channels: i < 3 ? ['early'] : ['late'],
          tags: i === 5 ? ['last'] : null,
        },
      });
      ids.push(res.body.id);
    }
  });
  afterAll(() => api.close());

  const list = async (query: string) => {
    const res = await api.request('GET', `/api/v1/app/${appId}/msg${query}`);
    expect(res.status, query).toBe(200);
    return res.body as {
      data: { id: string; payload: unknown }[];
      iterator: string;
      prevIterator: string;
      done: boolean;
    };
  };
  const idsOf = (page: { data: { id: string }[] }) => page.data.map((m) => m.id);

  it('lists newest first and walks the iterators', async () => {
    expect(idsOf(await list(''))).toEqual([...ids].reverse());
    const first = await list('?limit=4');
    expect(idsOf(first)).toEqual([ids[5], ids[4], ids[3], ids[2]]);
    expect(first.done).toBe(false);
    const next = await list(`?limit=4&iterator=${first.iterator}`);
    expect(idsOf(next)).toEqual([ids[1], ids[0]]);
    expect(next.done).toBe(true);
    const back = await list(`?limit=4&iterator=${next.prevIterator}`);
    expect(idsOf(back)).toEqual([ids[5], ids[4], ids[3], ids[2]]);
    expect(idsOf(await list('?order=ascending&limit=2'))).toEqual([ids[0], ids[1]]);
  });

  it('filters by event types, channel, tag and time', async () => {
    expect(idsOf(await list('?event_types=odd'))).toEqual([ids[5], ids[3], ids[1]]);
    expect(idsOf(await list('?event_types=odd,even&limit=2'))).toEqual([ids[5], ids[4]]);
    expect(idsOf(await list('?event_types=odd&event_types=none'))).toEqual([ids[5], ids[3], ids[1]]);
    expect(idsOf(await list('?channel=early'))).toEqual([ids[2], ids[1], ids[0]]);
    expect(idsOf(await list('?tag=last'))).toEqual([ids[5]]);
    // Messages were published at 12:00:01 … 12:00:06.
    expect(idsOf(await list('?before=2026-01-01T12:00:03.000Z'))).toEqual([ids[1], ids[0]]);
    expect(idsOf(await list('?before=2026-01-01T12:00:03.000Z&order=ascending&limit=1'))).toEqual([ids[0]]);
    expect(idsOf(await list('?before=1969-07-20T20:17:00.000Z'))).toEqual([]);
    expect(idsOf(await list('?after=2026-01-01T12:00:04.000Z'))).toEqual([ids[5], ids[4]]);
    expect((await list('?with_content=false')).data[0]!.payload).toEqual({});
    const bad = await api.request('GET', `/api/v1/app/${appId}/msg?before=yesterday`);
    expect(locs(bad)).toEqual(['query.before']);
    // Years 1 to 9999 in UTC: an offset that moves an instant out of them is refused, as is year 0.
    expect(idsOf(await list('?before=0001-01-01T00:00:00Z'))).toEqual([]);
    expect(idsOf(await list('?after=9999-12-31T23:59:59Z'))).toEqual([]);
    for (const query of [
      'before=0000-06-01T00:00:00Z',
      'before=0001-01-01T00:00:00%2B01:00',
      'after=9999-12-31T23:59:59-01:00',
    ]) {
      const out = await api.request('GET', `/api/v1/app/${appId}/msg?${query}`);
      expect(out.status, query).toBe(422);
      expect(locs(out), query).toEqual([`query.${query.split('=')[0]}`]);
    }
  });
});
