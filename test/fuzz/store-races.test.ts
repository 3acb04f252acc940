/**
 * Check-then-act races in the store that concurrent fuzzing turned up, pinned with deterministic
 * interleavings (one transaction held open while the other runs) so they stay fixed. The fixes:
 * one lock order everywhere (application, endpoint, deliveries, queue rows), publishes that read
 * endpoint status FOR SHARE, rotations serialised on the endpoint row, and endpoint creation that
 * re-checks its application under a share lock.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateSecret } from '../../src/signing/index.ts';
import type { Transaction } from '../../src/store/db.ts';
import { type Completion, complete } from '../../src/store/queries/complete.ts';
import { holdEndpoint, resumeEndpoint } from '../../src/store/queries/endpoint-status.ts';
import { deleteApplication } from '../../src/store/repos/applications.ts';
import { getEndpointById, rotateSecret, updateEndpoint } from '../../src/store/repos/endpoints.ts';
import { createApp, createEndpoint, startApi, type TestApi } from '../e2e/support.ts';
import { deliveredCompletion } from '../support/fixtures.ts';
import { blockedBy, holdOpen } from '../support/transactions.ts';

describe('store races (defects outside src/api)', () => {
  let api: TestApi;
  let appId: string;
  beforeAll(async () => {
    api = await startApi();
    appId = await createApp(api);
  });
  afterAll(() => api.close());

  const count = async (sql: string, params: unknown[]) =>
    (await api.db.query<{ n: number }>(sql, params)).rows[0]!.n;

  it('rotateSecret: two rotations at once leave one current secret', async () => {
    // src/store/repos/endpoints.ts rotateSecret: the UPDATE that expires the current secret does not
    // see a secret inserted by a concurrent rotation, and nothing serialises rotations per endpoint.
    // Through the API: two POST …/secret/rotate (or PATCH with a secret) at once.
    const ep = await createEndpoint(api, appId, { url: 'https://example.com/rotate' });
    const now = api.clock.now();
    const first = await holdOpen(api.db, (tx) => rotateSecret(tx, ep.id, generateSecret(), 0, now));
    const second = api.db.transaction((tx) => rotateSecret(tx, ep.id, generateSecret(), 0, now));
    await blockedBy(api.db, first.pid);
    await first.commit();
    await second;
    const current = await count(
      'select count(*)::int as n from courier_endpoint_secrets where endpoint_id = $1 and expires_at is null',
      [ep.id],
    );
    expect(current).toBe(1);
  });

  it('courier_publish: a message published while its endpoint resumes is not held', async () => {
    // courier_publish reads the endpoint status without locking the queue row; resumeEndpoint has
    // already released the held deliveries it could see, so the new 'held' one is never released.
    const ep = await createEndpoint(api, appId, { url: 'https://example.com/resume' });
    expect((await api.request('POST', `/api/v1/app/${appId}/endpoint/${ep.id}/pause`)).status).toBe(200);
    const resume = await holdOpen(api.db, (tx) => resumeEndpoint(tx, ep.id, api.clock.now(), 1_000, 1));
    const sent = api.request('POST', `/api/v1/app/${appId}/msg`, { body: { eventType: 'a', payload: {} } });
    await blockedBy(api.db, resume.pid);
    await resume.commit();
    expect((await sent).status).toBe(202);
    const held = await count(
      `select count(*)::int as n from courier_deliveries d join courier_endpoints e on e.id = d.endpoint_id
        where d.endpoint_id = $1 and d.state = 'held' and e.status = 'enabled'`,
      [ep.id],
    );
    expect(held).toBe(0);
  });

  it('courier_publish: a message published while its endpoint is paused is held', async () => {
    // The other order: publish sees 'enabled', inserts 'pending', then waits for the queue row the
    // hold locked; holdEndpoint had already turned the pending deliveries it could see into held.
    const ep = await createEndpoint(api, appId, { url: 'https://example.com/pause' });
    const hold = await holdOpen(api.db, (tx) => holdEndpoint(tx, ep.id, 'paused', 'test', api.clock.now()));
    const sent = api.request('POST', `/api/v1/app/${appId}/msg`, { body: { eventType: 'b', payload: {} } });
    await blockedBy(api.db, hold.pid);
    await hold.commit();
    expect((await sent).status).toBe(202);
    const pending = await count(
      `select count(*)::int as n from courier_deliveries d join courier_endpoints e on e.id = d.endpoint_id
        where d.endpoint_id = $1 and d.state = 'pending' and e.status <> 'enabled'`,
      [ep.id],
    );
    expect(pending).toBe(0);
  });

  it('updateEndpoint and holdEndpoint lock in the same order: no deadlock', async () => {
    // src/store/repos/endpoints.ts updateEndpoint updates courier_endpoints, then
    // courier_endpoint_queues; holdEndpoint, resumeEndpoint, deleteEndpoint and deleteApplication take
    // the queue row first. Through the API: PATCH/PUT …/endpoint/:id or PUT/PATCH …/headers racing
    // POST …/pause, …/resume or DELETE. PostgreSQL aborts one of them with 40P01 (the API now
    // retries the victim; before, it answered 500).
    const ep = await createEndpoint(api, appId, { url: 'https://example.com/deadlock' });
    const endpoint = (await getEndpointById(api.db, ep.id))!;
    const now = api.clock.now();
    let atQueueRow!: () => void;
    const reachedQueueRow = new Promise<void>((resolve) => {
      atQueueRow = resolve;
    });
    let release!: () => void;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    let updater = 0;
    const update = api.db.transaction(async (tx) => {
      updater = (await tx.query<{ pid: number }>('select pg_backend_pid() as pid')).rows[0]!.pid;
      // The same transaction, paused just before updateEndpoint touches the queue row.
      const paused: Transaction = {
        exec: (sql) => tx.exec(sql),
        query: (async (sql: string, params?: readonly unknown[]) => {
          if (sql.includes('update courier_endpoint_queues')) {
            atQueueRow();
            await gate;
          }
          return tx.query(sql, params);
        }) as Transaction['query'],
      };
      await updateEndpoint(paused, ep.id, { ...endpoint, description: 'updated' }, now);
    });
    await reachedQueueRow;
    const hold = api.db.transaction((tx) => holdEndpoint(tx, ep.id, 'paused', null, now));
    await blockedBy(api.db, updater);
    release();
    const outcomes = await Promise.allSettled([update, hold]);
    expect(
      outcomes.map((o) => (o.status === 'fulfilled' ? 'ok' : (o.reason as { code?: string }).code)),
    ).toEqual(['ok', 'ok']);
  });

  it('createEndpoint: an endpoint created while its application is deleted is refused', async () => {
    // POST …/endpoint looks the application up (still live), then createEndpoint inserts without
    // checking it again: its foreign key waits for the deletion, which has already soft-deleted the
    // endpoints it could see, and then passes (the row is only marked deleted). The endpoint stays
    // live, with an active queue, under a deleted application.
    const doomed = await createApp(api, { name: 'doomed' });
    const deletion = await holdOpen(api.db, (tx) => deleteApplication(tx, doomed, api.clock.now()));
    const created = api.request('POST', `/api/v1/app/${doomed}/endpoint`, {
      body: { url: 'https://example.com/orphan' },
    });
    await blockedBy(api.db, deletion.pid);
    await deletion.commit();
    expect((await created).status).toBe(404);
    const orphans = await count(
      'select count(*)::int as n from courier_endpoints where app_id = $1 and deleted_at is null',
      [doomed],
    );
    expect(orphans).toBe(0);
  });

  describe('a resume committing while a delivery is made held leaves nothing held on an enabled endpoint', () => {
    /** A paused endpoint with one delivery, and a resume of it held open (its locks taken). */
    async function pausedWithDelivery(name: string) {
      const ep = await createEndpoint(api, appId, {
        url: `https://example.com/${name}`,
        filterTypes: [name],
      });
      const sent = await api.request<{ id: string }>('POST', `/api/v1/app/${appId}/msg`, {
        body: { eventType: name, payload: {} },
      });
      expect((await api.request('POST', `/api/v1/app/${appId}/endpoint/${ep.id}/pause`)).status).toBe(200);
      return { ep, messageId: sent.body.id };
    }
    const heldOnEnabled = (endpointId: string) =>
      count(
        `select count(*)::int as n from courier_deliveries d join courier_endpoints e on e.id = d.endpoint_id
          where d.endpoint_id = $1 and d.state = 'held' and e.status = 'enabled'`,
        [endpointId],
      );
    /** Runs `act` while the resume is held open, then lets the resume commit. */
    async function duringResume<T>(endpointId: string, act: () => Promise<T>): Promise<T> {
      const resume = await holdOpen(api.db, (tx) =>
        resumeEndpoint(tx, endpointId, api.clock.now(), 1_000, 1),
      );
      const acting = act();
      acting.catch(() => {}); // awaited below; an early failure must not go unhandled meanwhile
      try {
        // The act must wait for the resume's locks (blockedBy throws if it never does), or the
        // interleaving under test did not happen. Commit regardless, so no transaction stays open.
        await blockedBy(api.db, resume.pid);
      } finally {
        await resume.commit();
      }
      return acting;
    }

    it('a dead letter replayed (dead-letter.ts replayDeadLetters)', async () => {
      const { ep } = await pausedWithDelivery('replay-resume');
      await api.db.query(`update courier_deliveries set state = 'failed' where endpoint_id = $1`, [ep.id]);
      const replay = await duringResume(ep.id, () =>
        api.request<{ replayed: number }>(
          'POST',
          `/api/v1/app/${appId}/endpoint/${ep.id}/dead-letter/replay`,
          {
            body: {},
          },
        ),
      );
      expect(replay.body.replayed).toBe(1);
      expect(await heldOnEnabled(ep.id)).toBe(0);
    });

    it('a delivery resent (resend.ts resendDelivery)', async () => {
      const { ep, messageId } = await pausedWithDelivery('resend-resume');
      await api.db.query(`update courier_deliveries set state = 'failed' where endpoint_id = $1`, [ep.id]);
      const resend = await duringResume(ep.id, () =>
        api.request('POST', `/api/v1/app/${appId}/msg/${messageId}/endpoint/${ep.id}/resend`),
      );
      expect(resend.status).toBe(202);
      expect(await heldOnEnabled(ep.id)).toBe(0);
    });

    it('a retry completed (courier_complete_rows, migration 0013)', async () => {
      const ep = await createEndpoint(api, appId, {
        url: 'https://example.com/retry-resume',
        filterTypes: ['retry-resume'],
      });
      await api.request('POST', `/api/v1/app/${appId}/msg`, {
        body: { eventType: 'retry-resume', payload: {} },
      });
      const now = api.clock.now();
      // In flight: claimed by a worker, whose completion reads the endpoint as paused.
      await api.db.query(
        `update courier_deliveries set lease_owner = 'w', lease_expires_at = $2 where endpoint_id = $1`,
        [ep.id, new Date(now + 60_000)],
      );
      await api.db.query('update courier_endpoint_queues set in_flight = 1 where endpoint_id = $1', [ep.id]);
      expect((await api.request('POST', `/api/v1/app/${appId}/endpoint/${ep.id}/pause`)).status).toBe(200);
      const { rows } = await api.db.query<{ id: number }>(
        'select id from courier_deliveries where endpoint_id = $1',
        [ep.id],
      );
      const delivered = deliveredCompletion(Number(rows[0]!.id), 1, now);
      const retry: Completion = {
        ...delivered,
        state: 'pending',
        nextAttemptAt: now + 60_000,
        lastError: 'HTTP 500',
        streak: 'increment',
        attempt: {
          ...delivered.attempt,
          statusCode: 500,
          decision: 'retry',
          delayMs: 60_000,
          detail: 'HTTP 500',
        },
      };
      await duringResume(ep.id, () => complete(api.db, 'w', now, [retry], 100));
      expect(await heldOnEnabled(ep.id)).toBe(0);
      const queue = await api.db.query<{ next_due_at: Date | null; in_flight: number }>(
        'select next_due_at, in_flight from courier_endpoint_queues where endpoint_id = $1',
        [ep.id],
      );
      expect(queue.rows[0]).toEqual({ next_due_at: new Date(now + 60_000), in_flight: 0 });
    });
  });
});
