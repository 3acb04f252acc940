import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { PayloadExpirySweeper } from '../../src/dispatch/payload-expiry.ts';
import { BACKENDS, openTestDatabase, type TestDatabase } from '../support/databases.ts';
import { makeApp, makeEndpoint } from '../support/fixtures.ts';
import { listenForWork } from '../support/transactions.ts';

// The transactional outbox: an application sharing the database queues a webhook inside its own
// transaction with courier_publish(), so the webhook exists if and only if the business change commits.
describe.each(BACKENDS)('courier_publish as a transactional outbox on %s', (backend) => {
  let t: TestDatabase;
  const now = Date.UTC(2026, 0, 1, 12);

  beforeEach(async () => {
    t = await openTestDatabase(backend);
    await t.db.query('create table invoices (id integer primary key, status text not null)');
  });
  afterEach(async () => {
    await t.drop();
  });

  const count = async (table: string) =>
    (await t.db.query<{ n: number }>(`select count(*)::int as n from ${table}`)).rows[0]!.n;

  async function payInvoice(appId: string, fail: boolean): Promise<void> {
    await t.db.transaction(async (tx) => {
      await tx.query(`insert into invoices values (42, 'paid')`);
      await tx.query(
        `select * from courier_publish(p_app_id => $1, p_event_type => 'invoice.paid',
           p_payload => convert_to('{"invoice":42}', 'UTF8'), p_event_id => 'invoice-42-paid', p_now => $2)`,
        [appId, new Date(now)],
      );
      if (fail) throw new Error('the business change failed after queuing the webhook');
    });
  }

  it('queues nothing when the business transaction rolls back', async () => {
    const app = await makeApp(t.db, now);
    await makeEndpoint(t.db, app.id, now, { url: 'https://example.com/hook' });
    await expect(payInvoice(app.id, true)).rejects.toThrow(/business change failed/);
    expect(await count('invoices')).toBe(0);
    expect(await count('courier_messages')).toBe(0);
    expect(await count('courier_deliveries')).toBe(0);
  });

  it('queues the message and its deliveries when it commits, once per event id', async () => {
    const app = await makeApp(t.db, now);
    await makeEndpoint(t.db, app.id, now, { url: 'https://example.com/hook' });
    await payInvoice(app.id, false);
    expect(await count('invoices')).toBe(1);
    const { rows } = await t.db.query<{ id: string; payload: Uint8Array }>(
      'select id, payload from courier_messages',
    );
    expect(rows).toHaveLength(1);
    expect(rows[0]!.id).toMatch(/^msg_[0-9A-HJKMNP-TV-Z]{26}$/);
    expect(Buffer.from(rows[0]!.payload).toString()).toBe('{"invoice":42}');
    expect(await count('courier_deliveries')).toBe(1);
    const { rows: again } = await t.db.query<{ created: boolean; message_id: string }>(
      `select * from courier_publish($1, 'invoice.paid', convert_to('{}', 'UTF8'), 'invoice-42-paid')`,
      [app.id],
    );
    expect(again).toEqual([{ message_id: rows[0]!.id, created: false, deliveries: 0, woke: false }]);
  });
  it('wakes workers when it commits, also for an endpoint that already had work due', async () => {
    const app = await makeApp(t.db, now);
    await makeEndpoint(t.db, app.id, now, { url: 'https://example.com/hook' });
    const workers = await listenForWork(t.db);
    const publishEvent = (eventId: string) =>
      t.db.query(
        `select * from courier_publish($1, 'invoice.paid', convert_to('{}', 'UTF8'), $2, p_now => $3)`,
        [app.id, eventId, new Date(now)],
      );
    try {
      for (const [i, eventId] of ['first', 'second'].entries()) {
        await publishEvent(eventId);
        expect(await workers.heard(i + 1)).toBe(i + 1);
      }
    } finally {
      await workers.stop();
    }
  });

  it('asks for a payload retention of its own, which the payload expiry then applies', async () => {
    const app = await makeApp(t.db, now);
    await makeEndpoint(t.db, app.id, now, { url: 'https://example.com/hook' });
    const expiresAt = new Date(now + 3_600_000);
    const { rows } = await t.db.query<{ message_id: string }>(
      `select * from courier_publish($1, 'invoice.paid', convert_to('{"card":"4242"}', 'UTF8'),
         p_now => $2, p_payload_expires_at => $3)`,
      [app.id, new Date(now), expiresAt],
    );
    const messageId = rows[0]!.message_id;
    const expiry = await t.db.query('select message_id, expires_at from courier_payload_expiries');
    expect(expiry.rows).toEqual([{ message_id: messageId, expires_at: expiresAt }]);
    expect((await new PayloadExpirySweeper(t.db).sweep(now + 3_599_999)).expunged).toBe(0);
    expect((await new PayloadExpirySweeper(t.db).sweep(now + 3_600_000)).expunged).toBe(1);
    const { rows: gone } = await t.db.query<{ payload: Uint8Array; state: string }>(
      `select m.payload, d.state from courier_messages m join courier_deliveries d on d.message_id = m.id`,
    );
    expect(gone.map((r) => [Buffer.from(r.payload).length, r.state])).toEqual([[0, 'failed']]);
  });

  it("keeps the message's time to the millisecond, as every other publish does", async () => {
    const app = await makeApp(t.db, now);
    // now(), p_now's default, has microseconds: listed after its own time, the message came again.
    await t.db.query(
      `select * from courier_publish($1, 'invoice.paid', convert_to('{}', 'UTF8'), p_now => $2)`,
      [app.id, '2026-01-01T12:00:05.000400Z'],
    );
    const { rows } = await t.db.query<{ created_at: Date; micros: number }>(
      `select created_at, (extract(microseconds from created_at) % 1000)::int as micros from courier_messages`,
    );
    expect(rows).toEqual([{ created_at: new Date('2026-01-01T12:00:05.000Z'), micros: 0 }]);
  });

  it('refuses a payload expiry that is not after p_now, and publishes nothing', async () => {
    const app = await makeApp(t.db, now);
    await expect(
      t.db.query(
        `select * from courier_publish($1, 'invoice.paid', convert_to('{}', 'UTF8'),
           p_now => $2, p_payload_expires_at => $2)`,
        [app.id, new Date(now)],
      ),
    ).rejects.toThrow(/p_payload_expires_at .* must be later than p_now/);
    expect(await count('courier_messages')).toBe(0);
  });
});
