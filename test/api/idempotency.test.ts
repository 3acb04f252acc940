import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DatabaseUnavailableError } from '../../src/store/db.ts';
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
      return run();
    });
    api = await startApi({ database: { ...t, db } });
  });
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

  it.each(['before', 'after'] as const)(
    'publishes once when the SDK repeats a publish whose connection was lost %s its commit',
    async (when) => {
      const appId = await createApp(api);
      const post = () =>
        api.request<{ id: string }>('POST', `/api/v1/app/${appId}/msg`, {
          body: { eventType: 'a', payload: { n: 1 } },
          headers: { 'idempotency-key': `lost-${when}` },
        });
      losePublish = when;
      const first = await post();
      expect(first.status).toBe(503);
      const again = await post();
      expect(again.status).toBe(202);
      const { rows } = await t.db.query<{ id: string }>('select id from courier_messages where app_id = $1', [
        appId,
      ]);
      // One message, under the id the first try was to take: receivers see one webhook-id.
      expect(rows.map((r) => r.id)).toEqual([again.body.id]);
      const third = await post();
      expect([third.body.id, third.headers.get('idempotent-replayed')]).toEqual([again.body.id, 'true']);
    },
  );
});
