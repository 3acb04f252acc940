import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OPERATOR_APP_UID } from '../../src/dispatch/operator-uids.ts';
import { ensureOperatorEndpoint } from '../../src/dispatch/operator-webhook.ts';
import { holdOpen, waitingBehind } from '../support/transactions.ts';
import { createApp, locs, startApi, type TestApi } from './support.ts';

describe('applications', () => {
  let api: TestApi;
  beforeAll(async () => {
    api = await startApi();
  });
  afterAll(() => api.close());

  it('creates, reads by id and uid, updates, patches and deletes', async () => {
    const created = await api.request('POST', '/api/v1/app', {
      body: { name: 'Shop', uid: 'shop-1', metadata: { team: 'billing' }, throttleRate: 20 },
    });
    expect(created.status).toBe(201);
    const app = created.body;
    expect(app).toEqual({
      id: expect.stringMatching(/^app_[0-9A-Z]{26}$/),
      uid: 'shop-1',
      name: 'Shop',
      rateLimit: 20,
      throttleRate: 20,
      metadata: { team: 'billing' },
      retryPolicy: null,
      createdAt: '2026-01-01T12:00:00.000Z',
      updatedAt: '2026-01-01T12:00:00.000Z',
    });
    expect((await api.request('GET', `/api/v1/app/${app.id}`)).body).toEqual(app);
    expect((await api.request('GET', '/api/v1/app/shop-1')).body).toEqual(app);

    api.clock.advance(1000);
    const patched = await api.request('PATCH', '/api/v1/app/shop-1', { body: { name: 'Shop 2' } });
    expect(patched.status).toBe(200);
    expect(patched.body).toMatchObject({
      name: 'Shop 2',
      uid: 'shop-1',
      rateLimit: 20,
      metadata: { team: 'billing' },
    });
    expect(patched.body.updatedAt).toBe('2026-01-01T12:00:01.000Z');

    // PUT replaces: what is absent goes back to its default.
    const put = await api.request('PUT', `/api/v1/app/${app.id}`, {
      body: { name: 'Shop 3', uid: 'shop-1' },
    });
    expect(put.status).toBe(200);
    expect(put.body).toMatchObject({ id: app.id, name: 'Shop 3', rateLimit: null, metadata: {} });

    const cleared = await api.request('PATCH', `/api/v1/app/${app.id}`, { body: { uid: null } });
    expect(cleared.body.uid).toBeNull();

    const ep = await api.request('POST', `/api/v1/app/${app.id}/endpoint`, {
      body: { url: 'https://example.com/hook' },
    });
    await api.request('POST', `/api/v1/app/${app.id}/msg`, { body: { eventType: 'e', payload: {} } });
    const deliveries = async () =>
      (
        await api.db.query<{ n: number }>(
          'select count(*)::int as n from courier_deliveries where endpoint_id = $1',
          [ep.body.id],
        )
      ).rows[0]!.n;
    expect(await deliveries()).toBe(1);
    expect((await api.request('DELETE', `/api/v1/app/${app.id}`)).status).toBe(204);
    expect(await deliveries()).toBe(0); // its endpoints' deliveries will never be sent
    expect((await api.request('GET', `/api/v1/app/${app.id}`)).status).toBe(404);
    expect((await api.request('DELETE', `/api/v1/app/${app.id}`)).status).toBe(404);
  });

  it('POST with get_if_exists returns the existing application (200); without it, 409', async () => {
    const first = await api.request('POST', '/api/v1/app', { body: { name: 'A', uid: 'dup' } });
    const again = await api.request('POST', '/api/v1/app?get_if_exists=true', {
      body: { name: 'other', uid: 'dup' },
    });
    expect(again.status).toBe(200);
    expect(again.body).toEqual(first.body);
    const conflict = await api.request('POST', '/api/v1/app', { body: { name: 'A', uid: 'dup' } });
    expect(conflict.status).toBe(409);
    expect(conflict.body.code).toBe('conflict');
    // A uid taken by another application cannot be given by PATCH either.
    const other = await api.request('POST', '/api/v1/app', { body: { name: 'B' } });
    const steal = await api.request('PATCH', `/api/v1/app/${other.body.id}`, { body: { uid: 'dup' } });
    expect(steal.status).toBe(409);
  });

  it('concurrent get_if_exists creates with one uid make one application', async () => {
    const answers = await Promise.all(
      Array.from({ length: 12 }, () =>
        api.request('POST', '/api/v1/app?get_if_exists=true', { body: { name: 'race', uid: 'raced' } }),
      ),
    );
    // Some lose the race at the uid check, some at the unique index: all answer with the winner.
    expect(answers.map((a) => a.status).sort()).toEqual([...Array(11).fill(200), 201]);
    expect(new Set(answers.map((a) => a.body.id)).size).toBe(1);
  });

  it('PUTs of a new uid at once create one application: the others update it (no 409)', async () => {
    const answers = await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        api.request('PUT', '/api/v1/app/raced-by-put', { body: { name: `Raced ${i}` } }),
      ),
    );
    expect(answers.map((a) => a.status).sort()).toEqual([200, 200, 200, 200, 200, 200, 200, 201]);
    expect(new Set(answers.map((a) => a.body.id)).size).toBe(1);
  });

  it('PUT on an unknown uid creates the application with that uid (201)', async () => {
    const res = await api.request('PUT', '/api/v1/app/created-by-put', { body: { name: 'Upserted' } });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ uid: 'created-by-put', name: 'Upserted' });
    for (const name of ['Renamed', 'Renamed again']) {
      // Repeated, the same PUT updates the same application and keeps its uid.
      const again = await api.request('PUT', '/api/v1/app/created-by-put', { body: { name } });
      expect(again.status).toBe(200);
      expect(again.body).toMatchObject({ id: res.body.id, uid: 'created-by-put', name });
    }
    const unknown = await api.request('PUT', '/api/v1/app/app_01ARZ3NDEKTSV4RRFFQ69G5FAV', {
      body: { name: 'x' },
    });
    expect(unknown.status).toBe(404);
    expect(unknown.body.code).toBe('not_found');
  });

  it("keeps the operator application's uid to it: none other takes it, and it keeps it", async () => {
    const refused = [
      await api.request('POST', '/api/v1/app', { body: { name: 'x', uid: OPERATOR_APP_UID } }),
      await api.request('PUT', `/api/v1/app/${OPERATOR_APP_UID}`, { body: { name: 'x' } }),
      await api.request('PATCH', `/api/v1/app/${await createApp(api)}`, { body: { uid: OPERATOR_APP_UID } }),
    ];
    expect(refused.map((r) => [r.status, locs(r)])).toEqual([
      [422, ['body.uid']],
      [422, ['path.app_id']],
      [422, ['body.uid']],
    ]);
    expect(refused[0]!.body.detail[0].msg).toMatch(/reserved for Courier's operator application/);

    // The one Courier makes can be edited, but keeps its uid.
    const { appId } = await ensureOperatorEndpoint(api.db, 'http://127.0.0.1:9/operator', api.clock);
    const renamed = await api.request('PUT', `/api/v1/app/${OPERATOR_APP_UID}`, { body: { name: 'Ops' } });
    expect(renamed.body).toMatchObject({ id: appId, uid: OPERATOR_APP_UID, name: 'Ops' });
    const moved = await api.request('PATCH', `/api/v1/app/${appId}`, { body: { uid: 'elsewhere' } });
    expect([moved.status, locs(moved)]).toEqual([422, ['body.uid']]);
    expect(moved.body.detail[0].msg).toBe(`the operator application keeps its uid ${OPERATOR_APP_UID}`);
  });

  it('keeps both of two concurrent PATCHes of one application', async () => {
    const id = await createApp(api, { name: 'before' });
    const holder = await holdOpen(api.db, (tx) =>
      tx.query('select 1 from courier_applications where id = $1 for update', [id]),
    );
    const patches = [
      api.request('PATCH', `/api/v1/app/${id}`, { body: { name: 'after' } }),
      api.request('PATCH', `/api/v1/app/${id}`, { body: { metadata: { tier: 'gold' } } }),
    ] as const;
    try {
      // Both must wait for the row lock, or the lost update under test could not happen.
      await waitingBehind(api.db, holder.pid, patches.length);
    } finally {
      await holder.commit();
      await Promise.allSettled(patches); // the server cannot close (afterAll) while they are in flight
    }
    const [name, metadata] = await Promise.all(patches);
    expect([name.status, metadata.status]).toEqual([200, 200]);
    expect((await api.request('GET', `/api/v1/app/${id}`)).body).toMatchObject({
      name: 'after',
      metadata: { tier: 'gold' },
    });
  });

  it('validates uids, names and the retry policy', async () => {
    const badUid = await api.request('POST', '/api/v1/app', {
      body: { name: 'x', uid: 'app_looks_like_an_id' },
    });
    expect(locs(badUid)).toEqual(['body.uid']);
    const long = await api.request('POST', '/api/v1/app', { body: { name: 'x', uid: 'u'.repeat(257) } });
    expect(locs(long)).toEqual(['body.uid']);
    const empty = await api.request('POST', '/api/v1/app', { body: { name: '' } });
    expect(locs(empty)).toEqual(['body.name']);
    const policy = await api.request('POST', '/api/v1/app', {
      body: { name: 'x', retryPolicy: { giveUp: { maxAttempts: 0 } } },
    });
    expect(policy.status).toBe(422);
    expect(locs(policy)[0]).toMatch(/^body\.retryPolicy/);
    const typo = await api.request('POST', '/api/v1/app', {
      body: { name: 'x', retryPolicy: { backof: {} } },
    });
    expect(typo.status).toBe(422);
    const key = await api.request('POST', '/api/v1/app', {
      body: { name: 'x', retryPolicy: { classifier: { overrides: { '404.0': 'permanent' } } } },
    });
    expect(key.status).toBe(422);
    expect(locs(key)[0]).toMatch(/^body\.retryPolicy\.classifier\.overrides/);
    const good = await api.request('POST', '/api/v1/app', {
      body: {
        name: 'x',
        retryPolicy: { backoff: { scheduleMs: [1000, 60000] }, giveUp: { maxAttempts: 3 } },
      },
    });
    expect(good.status).toBe(201);
    expect(good.body.retryPolicy).toEqual({
      backoff: { scheduleMs: [1000, 60000] },
      giveUp: { maxAttempts: 3 },
    });
  });

  it('refuses the Svix list filters it does not implement rather than answer unfiltered', async () => {
    const refused = await api.request('GET', '/api/v1/app?exclude_apps_with_no_endpoints=true');
    expect([refused.status, locs(refused)]).toEqual([422, ['query.exclude_apps_with_no_endpoints']]);
    expect((await api.request('GET', '/api/v1/app?exclude_apps_with_disabled_endpoints=false')).status).toBe(
      200,
    );
  });

  it('paginates forwards and backwards with iterators, in both orders', async () => {
    const fresh = await startApi();
    try {
      const ids: string[] = [];
      for (let i = 0; i < 7; i++) {
        ids.push((await fresh.request('POST', '/api/v1/app', { body: { name: `app ${i}` } })).body.id);
      }
      const seen: string[] = [];
      let iterator: string | null = null;
      let pages = 0;
      for (;;) {
        const q: string = iterator ? `&iterator=${iterator}` : '';
        const page = await fresh.request('GET', `/api/v1/app?limit=3${q}`);
        expect(page.status).toBe(200);
        seen.push(...page.body.data.map((a: { id: string }) => a.id));
        pages++;
        if (page.body.done) break;
        iterator = page.body.iterator;
      }
      expect(seen).toEqual(ids);
      expect(pages).toBe(3);

      const second = await fresh.request('GET', `/api/v1/app?limit=3&iterator=${ids[2]}`);
      expect(second.body.data.map((a: { id: string }) => a.id)).toEqual(ids.slice(3, 6));
      expect(second.body.prevIterator).toBe(`-${ids[3]}`);
      const back = await fresh.request('GET', `/api/v1/app?limit=3&iterator=${second.body.prevIterator}`);
      expect(back.body.data.map((a: { id: string }) => a.id)).toEqual(ids.slice(0, 3));
      expect(back.body.done).toBe(true);

      const desc = await fresh.request('GET', '/api/v1/app?limit=4&order=descending');
      expect(desc.body.data.map((a: { id: string }) => a.id)).toEqual([...ids].reverse().slice(0, 4));
      const descNext = await fresh.request(
        'GET',
        `/api/v1/app?limit=4&order=descending&iterator=${desc.body.iterator}`,
      );
      expect(descNext.body.data.map((a: { id: string }) => a.id)).toEqual([...ids].reverse().slice(4));
      expect(descNext.body.done).toBe(true);

      const all = await fresh.request('GET', '/api/v1/app');
      expect(all.body).toMatchObject({ done: true, iterator: ids[6], prevIterator: `-${ids[0]}` });
      expect((await fresh.request('GET', '/api/v1/app?limit=251')).status).toBe(422);
      expect((await fresh.request('GET', '/api/v1/app?limit=0')).status).toBe(422);
      expect((await fresh.request('GET', '/api/v1/app?iterator=ep_01KDWPVNG0Z2T6P6PJXKZK51B0')).status).toBe(
        422,
      );
    } finally {
      await fresh.close();
    }
  });
});
