import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { newId } from '../../src/ids.ts';
import { DatabaseUnavailableError } from '../../src/store/db.ts';
import { publish } from '../../src/store/publisher.ts';
import {
  FLUSH_BARRIER,
  flushBarrier,
  type PublishInput,
  publishBatch,
  publishUnflushed,
} from '../../src/store/queries/publish.ts';
import { BACKENDS, openTestDatabase, type TestDatabase } from '../support/databases.ts';
import { makeApp, makeEndpoint } from '../support/fixtures.ts';
import { intercepting } from '../support/intercepting.ts';
import { listenForWork } from '../support/transactions.ts';

describe.each(BACKENDS)('publishing on %s', (backend) => {
  let t: TestDatabase;
  const now = Date.UTC(2026, 0, 1, 12);
  let appId: string;

  beforeEach(async () => {
    t = await openTestDatabase(backend);
    appId = (await makeApp(t.db, now)).id;
    await makeEndpoint(t.db, appId, now, { url: 'https://example.com/all' });
    await makeEndpoint(t.db, appId, now, { url: 'https://example.com/orders', eventTypes: ['order.paid'] });
    await makeEndpoint(t.db, appId, now, { url: 'https://example.com/eu', channels: ['eu'] });
  });
  afterEach(async () => {
    await t.drop();
  });

  const message = (i: number, extra: Partial<PublishInput> = {}): PublishInput => ({
    appId,
    messageId: newId('msg', now + i),
    eventType: 'order.paid',
    payload: Buffer.from(`{"i":${i}}`),
    now: now + i,
    ...extra,
  });

  it('writes a batch in one statement: exact bytes, channels, tags, and deliveries per message', async () => {
    const inputs = [
      message(0),
      message(1, { eventType: 'user.created', channels: ['eu', 'us'], tags: ['t1'] }),
      message(2, { payload: Buffer.from([0, 255, 10, 13]), channels: [] }),
    ];
    const results = await publishBatch(t.db, inputs);
    expect(results.map((r) => [r.messageId, r.created, r.deliveries])).toEqual([
      [inputs[0]!.messageId, true, 2],
      [inputs[1]!.messageId, true, 2],
      [inputs[2]!.messageId, true, 2],
    ]);
    const { rows } = await t.db.query<{
      id: string;
      payload: Uint8Array;
      channels: string[] | null;
      tags: string[] | null;
    }>('select id, payload, channels, tags from courier_messages order by id');
    expect(rows.map((r) => Buffer.from(r.payload))).toEqual(inputs.map((i) => i.payload));
    expect(rows.map((r) => [r.channels, r.tags])).toEqual([
      [null, null],
      [['eu', 'us'], ['t1']],
      [[], null],
    ]);
    const due = await t.db.query<{ message_id: string; next_attempt_at: Date }>(
      `select message_id, next_attempt_at from courier_deliveries where state = 'pending' order by message_id, id`,
    );
    expect(due.rows.map((r) => r.next_attempt_at.getTime())).toEqual([
      now,
      now,
      now + 1,
      now + 1,
      now + 2,
      now + 2,
    ]);
  });

  it('reports a repeated event id, earlier or within the same batch, as the existing message', async () => {
    const [first] = await publishBatch(t.db, [message(0, { eventId: 'evt-1' })]);
    const inputs = [
      message(1, { eventId: 'evt-1' }),
      message(2, { eventId: 'evt-2' }),
      message(3, { eventId: 'evt-2' }),
    ];
    const results = await publishBatch(t.db, inputs);
    expect(results.map((r) => [r.messageId, r.created, r.deliveries])).toEqual([
      [first!.messageId, false, 0],
      [inputs[1]!.messageId, true, 2],
      [inputs[1]!.messageId, false, 0],
    ]);
    const { rows } = await t.db.query<{ n: number }>('select count(*)::int as n from courier_deliveries');
    expect(rows[0]!.n).toBe(4);
  });

  it('answers a batch mixing messages with and without event ids in its own order', async () => {
    // The two kinds are inserted by two statements (only a message with an event id can conflict).
    const inputs = [
      message(0),
      message(1, { eventId: 'evt-1' }),
      message(2),
      message(3, { eventId: 'evt-1' }),
      message(4, { eventId: 'evt-2' }),
    ];
    const results = await publishBatch(t.db, inputs);
    expect(results.map((r) => [r.messageId, r.created, r.deliveries])).toEqual([
      [inputs[0]!.messageId, true, 2],
      [inputs[1]!.messageId, true, 2],
      [inputs[2]!.messageId, true, 2],
      [inputs[1]!.messageId, false, 0],
      [inputs[4]!.messageId, true, 2],
    ]);
    const { rows } = await t.db.query<{ message_id: string; n: number }>(
      'select message_id, count(*)::int as n from courier_deliveries group by message_id order by message_id',
    );
    expect(rows).toEqual([0, 1, 2, 4].map((i) => ({ message_id: inputs[i]!.messageId, n: 2 })));
  });

  it('groups concurrent publishes, and one bad message fails alone', async () => {
    const good = Array.from({ length: 30 }, (_, i) => message(i));
    const bad = message(99, { appId: 'app_missing' });
    const settled = await Promise.allSettled([...good, bad].map((m) => publish(t.db, m)));
    expect(settled.slice(0, 30).every((s) => s.status === 'fulfilled' && s.value.deliveries === 2)).toBe(
      true,
    );
    expect(settled[30]!.status).toBe('rejected');
    const { rows } = await t.db.query<{ n: number }>('select count(*)::int as n from courier_messages');
    expect(rows[0]!.n).toBe(30);
  });

  it('fails the whole batch, writing nothing again, when its connection is lost (it may have committed)', async () => {
    let statements = 0;
    const db = intercepting(t.db, async (sql, _params, run) => {
      if (!sql.includes('courier_publish_batch(')) return run();
      statements++;
      await run(); // committed; the reply is what is lost
      throw new DatabaseUnavailableError('database unavailable: Connection terminated unexpectedly');
    });
    const outcomes = await Promise.allSettled([0, 1, 2].map((i) => publish(db, message(i))));
    expect(outcomes.map((o) => o.status)).toEqual(['rejected', 'rejected', 'rejected']);
    expect(
      outcomes.every((o) => o.status === 'rejected' && o.reason instanceof DatabaseUnavailableError),
    ).toBe(true);
    // The first publish went alone, the other two together: two statements, none repeated.
    expect(statements).toBe(2);
  });

  it('writes one batch at a time: publishes arriving meanwhile go out together in the next', async () => {
    const batches: number[] = [];
    // A database of its own (the publisher is per database) that records each batch's size.
    const counting = intercepting(t.db, (sql, params, run) => {
      if (sql.includes('courier_publish_batch(')) batches.push((params![0] as string[]).length);
      return run();
    });
    const results = await Promise.all(Array.from({ length: 31 }, (_, i) => publish(counting, message(i))));
    expect(results.every((r) => r.created && r.deliveries === 2)).toBe(true);
    expect(batches).toEqual([1, 30]);
  });

  // The batching is the backend's publisher alike; PGlite takes half a minute over 60 MiB.
  it.skipIf(backend === 'pglite')(
    'ends a batch at 16 MiB of payloads, a larger message going alone',
    async () => {
      const batches: number[] = [];
      const counting = intercepting(t.db, (sql, params, run) => {
        if (sql.includes('courier_publish_batch(')) batches.push((params![0] as string[]).length);
        return run();
      });
      const sized = (i: number, bytes: number) =>
        message(i, { payload: Buffer.from(JSON.stringify({ i, pad: 'x'.repeat(bytes) })) });
      // The first goes alone (the publisher idle); of those queued behind it, two of 6 MiB fit in
      // 16 MiB and a third does not; one of 20 MiB goes alone, and so does the last, behind it.
      const sizes = [10, 6, 6, 6, 20, 6].map((mib) => mib * 1024 * 1024);
      const results = await Promise.all(sizes.map((bytes, i) => publish(counting, sized(i, bytes))));
      expect(results.every((r) => r.created)).toBe(true);
      expect(batches).toEqual([1, 2, 1, 1, 1]);
    },
  );

  /** The database with each flush barrier passed to `barrier` instead of run at once. */
  const withBarriers = (barrier: (run: () => Promise<unknown>) => Promise<unknown>) =>
    intercepting(t.db, (sql, _params, run) => (sql === FLUSH_BARRIER ? barrier(run) : run()));

  it('wakes workers at the commit, and accepts a batch and writes the next once it is flushed', async () => {
    const held: Array<() => void> = [];
    const db = withBarriers((run) => new Promise<void>((resolve) => held.push(resolve)).then(run));
    const workers = await listenForWork(t.db);
    const deliveries = async () =>
      (await t.db.query<{ n: number }>('select count(*)::int as n from courier_deliveries')).rows[0]!.n;
    try {
      const accepted: string[] = [];
      const inputs = [message(0), message(1)];
      const first = publish(db, inputs[0]!).then((r) => accepted.push(r.messageId));
      expect(await workers.heard(1)).toBe(1);
      const second = publish(db, inputs[1]!).then((r) => accepted.push(r.messageId));
      await new Promise((resolve) => setTimeout(resolve, 50));
      expect([held.length, accepted.length, await deliveries()]).toEqual([1, 0, 2]);
      held[0]!();
      await first;
      expect(await workers.heard(2)).toBe(2);
      expect([accepted, await deliveries()]).toEqual([[inputs[0]!.messageId], 4]);
      await new Promise((resolve) => setTimeout(resolve, 50));
      expect(accepted).toHaveLength(1);
      held[1]!();
      await second;
      expect(accepted).toEqual(inputs.map((i) => i.messageId));
    } finally {
      await workers.stop();
    }
  });

  it('flushes at the barrier everything committed before it, an unflushed group publish included', async () => {
    // Each round: a commit that does not wait for its flush, then the barrier. Without a WAL record
    // of its own the barrier's commit would not wait either, and the flush would lag behind.
    for (let i = 0; i < 5; i++) {
      await publishUnflushed(t.db, [message(i)]);
      const { rows } = await t.db.query<{ lsn: string }>('select pg_current_wal_insert_lsn()::text as lsn');
      await flushBarrier(t.db);
      const flushed = await t.db.query<{ ok: boolean }>(
        'select pg_current_wal_flush_lsn() >= $1::pg_lsn as ok',
        [rows[0]!.lsn],
      );
      expect(flushed.rows[0]!.ok).toBe(true);
    }
  });

  it('reports an error, not an acceptance, when the flush cannot be confirmed', async () => {
    const db = withBarriers(() => Promise.reject(new Error('connection lost')));
    await expect(publish(db, message(0))).rejects.toThrow('connection lost');
    // The next publish is not held back by the failed one.
    const ok = withBarriers((run) => run());
    await expect(publish(ok, message(1))).resolves.toMatchObject({ created: true, deliveries: 2 });
  });

  it('inside a transaction, publishes only if the transaction commits', async () => {
    await expect(
      t.db.transaction(async (tx) => {
        await publish(tx, message(0));
        throw new Error('rolled back');
      }),
    ).rejects.toThrow('rolled back');
    const { rows } = await t.db.query<{ n: number }>('select count(*)::int as n from courier_messages');
    expect(rows[0]!.n).toBe(0);
  });

  it("inside a transaction, leaves the transaction's own commit waiting for its flush", async () => {
    const setting = await t.db.transaction(async (tx) => {
      await publish(tx, message(0));
      const { rows } = await tx.query<{ s: string }>(`select current_setting('synchronous_commit') as s`);
      return rows[0]!.s;
    });
    expect(setting).toBe('on');
  });

  it('NOTIFYs workers after every publish that made deliveries, due endpoint or not', async () => {
    const workers = await listenForWork(t.db);
    const notice = async (expected: number) => expect(await workers.heard(expected)).toBe(expected);
    try {
      await publish(t.db, message(0));
      await notice(1);
      // Its endpoints are due now; a claim may have passed them over while this publish held
      // them locked, and only this NOTIFY tells the worker to look again.
      await publish(t.db, message(1));
      await notice(2);
      // In the publishing transaction: a publish rolled back wakes no one.
      await expect(
        t.db.transaction(async (tx) => {
          await publish(tx, message(2));
          throw new Error('rolled back');
        }),
      ).rejects.toThrow('rolled back');
      await t.db.transaction((tx) => publish(tx, message(3)));
      await notice(3);
    } finally {
      await workers.stop();
    }
  });
});
