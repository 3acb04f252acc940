import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { DatabaseUnavailableError } from '../../src/store/db.ts';
import {
  claimIdempotencyKey,
  completeIdempotencyKey,
  findIdempotencyKey,
  releaseIdempotencyKey,
} from '../../src/store/repos/idempotency.ts';
import { createApp, startApi, type TestApi } from '../e2e/support.ts';
import { openTestDatabase, type TestDatabase } from '../support/databases.ts';
import { intercepting } from '../support/intercepting.ts';

describe('idempotency keys when the database falters', () => {
  let t: TestDatabase;
  let api: TestApi;
  /** How many of the next writes of a stored response fail, as in a brief database outage. */
  let failingStores = 0;
  /** The next publish's connection is lost: before its statement ran, or after it committed. */
  let losePublish: 'before' | 'after' | null = null;
  /** The next lookup of a message by id misses, as if the earlier try were still committing. */
  let missLookup = false;
  /** The next lookup of a message by id fails, the database faltering again. */
  let failLookup = false;
  /** The next creation's commit is not answered: an application's insert, an endpoint's transaction. */
  let loseCreation = false;
  /** The next lookup of an application by id or uid finds none (a repeat racing the earlier try). */
  let missAppLookup = false;

  beforeAll(async () => {
    t = await openTestDatabase('pg');
    const db = intercepting(t.db, (sql, _params, run) => {
      if (failingStores > 0 && sql.includes('update courier_idempotency_keys set status')) {
        failingStores--;
        return Promise.reject(new DatabaseUnavailableError('database unavailable: Connection terminated'));
      }
      if (losePublish === 'before' && sql.includes('courier_publish_batch')) {
        losePublish = null;
        return Promise.reject(new DatabaseUnavailableError('database unavailable: Connection terminated'));
      }
      if (losePublish === 'after' && sql.includes('courier_flush_barrier')) {
        // Committed, but whether it is on disk is unknown: the publish answers 503.
        losePublish = null;
        return Promise.reject(new DatabaseUnavailableError('database unavailable: Connection terminated'));
      }
      if (failLookup && sql.includes('from courier_messages') && sql.includes('order by id = $2 desc')) {
        failLookup = false;
        return Promise.reject(new DatabaseUnavailableError('database unavailable: Connection terminated'));
      }
      if (
        missAppLookup &&
        sql.includes('from courier_applications where (id = any($1::text[]) or uid = any($1::text[]))')
      ) {
        missAppLookup = false;
        return Promise.resolve({ rows: [], rowCount: 0 });
      }
      if (missLookup && sql.includes('from courier_messages') && sql.includes('order by id = $2 desc')) {
        missLookup = false;
        return Promise.resolve({ rows: [], rowCount: 0 });
      }
      if (loseCreation && sql.includes('insert into courier_applications')) {
        loseCreation = false;
        return run().then(lost);
      }
      return run();
    });
    // An endpoint is created in a transaction: the one after a creation was set to be lost.
    const transacting = new Proxy(db, {
      get(target, prop) {
        if (prop !== 'transaction') return Reflect.get(target, prop, target);
        return async (work: Parameters<typeof db.transaction>[0]) => {
          const result = await target.transaction(work);
          if (!loseCreation) return result;
          loseCreation = false;
          return lost();
        };
      },
    });
    api = await startApi({ database: { ...t, db: transacting } });
  });
  // A fault a test set up but no query met must not fall on the next test.
  afterEach(() => {
    failingStores = 0;
    losePublish = null;
    missLookup = false;
    failLookup = false;
    loseCreation = false;
    missAppLookup = false;
  });
  const lost = () =>
    Promise.reject(new DatabaseUnavailableError('database unavailable: Connection terminated'));
  /**
   * The first try of a publish whose commit's answer is lost: 503, or, where the HTTP client sent
   * the request again by itself (seen on a loaded machine), already the repeat's 202.
   */
  const lostAfterCommit = async (post: () => Promise<{ status: number }>) => {
    losePublish = 'after';
    const first = await post();
    expect([503, 202]).toContain(first.status);
    expect(losePublish).toBeNull();
    return first.status === 503;
  };
  afterAll(async () => {
    await api.close();
    await t.drop();
  });

  it('stores the response despite a brief failure, so a retry after the lock ran out replays it', async () => {
    const appId = await createApp(api);
    const post = () =>
      api.request<{ id: string }>('POST', `/api/v1/app/${appId}/msg`, {
        body: { eventType: 'a', payload: {} },
        headers: { 'idempotency-key': 'falter-1' },
      });
    failingStores = 2;
    const first = await post();
    expect([first.status, failingStores]).toEqual([202, 0]);
    api.clock.advance(61_000); // past the key's lock: an unstored key would be taken over
    const again = await post();
    expect([again.status, again.body.id, again.headers.get('idempotent-replayed')]).toEqual([
      202,
      first.body.id,
      'true',
    ]);
    const { rows } = await t.db.query<{ n: number }>(
      'select count(*)::int as n from courier_messages where app_id = $1',
      [appId],
    );
    expect(rows[0]!.n).toBe(1);
  });

  it.each([
    ['before', false],
    ['after', false],
    ['after', true],
  ] as const)(
    'publishes once when the SDK repeats a publish whose connection was lost %s its commit (the repeat racing it: %s)',
    async (when, racing) => {
      const appId = await createApp(api);
      const post = () =>
        api.request<{ id: string }>('POST', `/api/v1/app/${appId}/msg`, {
          body: { eventType: 'a', payload: { n: 1 } },
          headers: { 'idempotency-key': `lost-${when}-${racing}` },
        });
      if (when === 'before') {
        losePublish = when;
        expect((await post()).status).toBe(503);
      } else await lostAfterCommit(post);
      // Racing: the repeat's lookup misses the earlier try's message, whose id its publish then meets.
      missLookup = racing;
      const again = await post();
      expect(again.status).toBe(202);
      // The earlier try's message, found on disk, is a repeat too (courier send says so).
      expect(again.headers.get('idempotent-replayed')).toBe(when === 'after' ? 'true' : null);
      const { rows } = await t.db.query<{ id: string }>('select id from courier_messages where app_id = $1', [
        appId,
      ]);
      // One message, under the id the first try was to take: receivers see one webhook-id.
      expect(rows.map((r) => r.id)).toEqual([again.body.id]);
      const third = await post();
      expect([third.body.id, third.headers.get('idempotent-replayed')]).toEqual([again.body.id, 'true']);
    },
  );

  it('keeps the message id of a publish whose outcome is unknown through a repeat that fails before publishing', async () => {
    const appId = await createApp(api);
    const post = () =>
      api.request<{ id: string }>('POST', `/api/v1/app/${appId}/msg`, {
        body: { eventType: 'a', payload: { n: 2 } },
        headers: { 'idempotency-key': 'lost-then-faltering' },
      });
    if (await lostAfterCommit(post)) {
      // The repeat fails looking for the first try's message: it must not let the key forget it.
      failLookup = true;
      expect((await post()).status).toBe(503);
    }
    const third = await post();
    expect(third.status).toBe(202);
    const { rows } = await t.db.query<{ id: string }>('select id from courier_messages where app_id = $1', [
      appId,
    ]);
    expect(rows.map((r) => r.id)).toEqual([third.body.id]);
  });

  it('answers a repeat with an eventId that meets its own earlier try in the publish with 202, not 409', async () => {
    const appId = await createApp(api);
    const post = () =>
      api.request<{ id: string }>('POST', `/api/v1/app/${appId}/msg`, {
        body: { eventType: 'a', eventId: 'evt-own', payload: { n: 3 } },
        headers: { 'idempotency-key': 'lost-with-event-id' },
      });
    await lostAfterCommit(post);
    missLookup = true;
    const again = await post();
    expect(again.status).toBe(202);
    const { rows } = await t.db.query<{ id: string }>('select id from courier_messages where app_id = $1', [
      appId,
    ]);
    expect(rows.map((r) => r.id)).toEqual([again.body.id]);
    // Another key with the same eventId is still a conflict.
    const other = await api.request('POST', `/api/v1/app/${appId}/msg`, {
      body: { eventType: 'a', eventId: 'evt-own', payload: { n: 3 } },
      headers: { 'idempotency-key': 'another' },
    });
    expect(other.status).toBe(409);
  });

  it.each([
    ['application', false],
    ['application', true],
    ['application with a uid', true],
    ['endpoint', false],
    ['operational endpoint', false],
  ] as const)(
    'creates one %s when the SDK repeats a creation whose commit was not answered (the repeat racing it: %s)',
    async (what, racing) => {
      const name = `created-once-${what.replaceAll(' ', '-')}-${racing}`;
      const url = `https://example.com/${name}`;
      let path = '/api/v1/app';
      let body: Record<string, unknown> = { name };
      // Its uid check then meets the earlier try's application (a 409), before any insert.
      if (what === 'application with a uid') body = { name, uid: name };
      let made = { sql: 'select id from courier_applications where name = $1', param: name };
      if (what === 'endpoint') {
        path = `/api/v1/app/${await createApp(api)}/endpoint`;
        body = { url };
      } else if (what === 'operational endpoint') {
        path = '/api/v1/operational-webhook/endpoint';
        body = { url };
        // Its application made first: the creation lost is the endpoint's.
        await api.request('POST', path, { body: { url: 'https://example.com/first' } });
      }
      if (what === 'endpoint' || what === 'operational endpoint')
        made = { sql: 'select id from courier_endpoints where url = $1', param: url };
      const post = () =>
        api.request<{ id: string }>('POST', path, { body, headers: { 'idempotency-key': name } });
      loseCreation = true;
      const first = await post();
      // 503; or, where the HTTP client sent the request again by itself, already the repeat's 201.
      expect([503, 201]).toContain(first.status);
      expect(loseCreation).toBe(false);
      // Racing: the repeat's lookup misses the earlier try's application, whose id its insert then meets.
      // (Where the client's own repeat already had the 201, the key holds it: no lookup to race.)
      missAppLookup = racing && first.status === 503;
      const again = await post();
      expect(missAppLookup).toBe(false);
      // The earlier try's creation, found on disk: a repeat, as the stored answer would say.
      expect([again.status, again.headers.get('idempotent-replayed')]).toEqual([201, 'true']);
      const { rows } = await t.db.query<{ id: string }>(made.sql, [made.param]);
      expect(rows.map((r) => r.id)).toEqual([again.body.id]);
      const third = await post();
      expect([third.body.id, third.headers.get('idempotent-replayed')]).toEqual([again.body.id, 'true']);
    },
  );

  it('lets only the request holding a key store or release it', async () => {
    const key = { scope: 'test', key: 'held', method: 'POST', path: '/api/v1/app/x/msg' };
    const now = api.clock.now();
    const first = await claimIdempotencyKey(t.db, key, 'print', now, 60_000, 86_400_000, null);
    // Its lock ran out, and a repeat took the key over.
    const second = await claimIdempotencyKey(t.db, key, 'print', now + 61_000, 60_000, 86_400_000, null);
    expect([first, second].map((c) => c !== null)).toEqual([true, true]);
    await releaseIdempotencyKey(t.db, key, false, first!.token);
    await completeIdempotencyKey(t.db, key, { status: 400, contentType: null, body: 'late' }, first!.token);
    expect(await findIdempotencyKey(t.db, key)).toMatchObject({ status: null, lockedUntil: now + 121_000 });
    await completeIdempotencyKey(t.db, key, { status: 202, contentType: null, body: 'ok' }, second!.token);
    expect(await findIdempotencyKey(t.db, key)).toMatchObject({ status: 202, body: 'ok' });
  });
});
