import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  DEAD_LETTER_PAGE,
  DEAD_LETTERS_TO_REPLAY,
  IN_ID_ORDER,
} from '../../src/store/queries/dead-letter.ts';
import { BACKENDS, openTestDatabase, type TestDatabase } from '../support/databases.ts';
import { makeApp, makeEndpoint } from '../support/fixtures.ts';
import { rowsRead } from '../support/plans.ts';

const DEAD = 2000;
/** Other endpoints, each with a delivery of every message: the endpoint's rows are 1 in 10 by id. */
const OTHERS = 9;
const PAGE = 100;

/**
 * A page of dead letters, listed or replayed, reads about its own rows: not every dead letter of
 * the endpoint past the last page (sorted to take the first), nor every message (hashed), which
 * made going through an endpoint's N dead letters cost O(N²).
 */
describe.each(BACKENDS)('pages of dead letters on %s', (backend) => {
  let t: TestDatabase;
  let endpointId: string;
  let middle: number;
  const now = Date.UTC(2026, 0, 1, 12);

  beforeAll(async () => {
    t = await openTestDatabase(backend);
    const app = await makeApp(t.db, now);
    endpointId = (await makeEndpoint(t.db, app.id, now, { url: 'http://127.0.0.1:1/a' })).id;
    const others: string[] = [];
    for (let i = 0; i < OTHERS; i++)
      others.push((await makeEndpoint(t.db, app.id, now, { url: `http://127.0.0.1:1/${i}` })).id);
    await t.db.query(
      `insert into courier_messages (id, app_id, event_type, payload, created_at)
       select 'msg_' || lpad(i::text, 8, '0'), $1, 'a', '\\x7b7d', $2 from generate_series(1, $3) i`,
      [app.id, new Date(now), DEAD],
    );
    // Every message dead at the endpoint, and waiting at the others (scheduled for tomorrow).
    await t.db.query(
      `insert into courier_deliveries (message_id, endpoint_id, state, next_attempt_at, attempts, created_at, updated_at)
       select 'msg_' || lpad(i::text, 8, '0'), e.id, case when e.id = $1::text then 'failed' else 'pending' end,
              $3::timestamptz + interval '1 day', 5, $3, $3
         from generate_series(1, $4) i cross join unnest($1::text || $2::text[]) e(id) order by i, e.id`,
      [endpointId, others, new Date(now), DEAD],
    );
    await t.db.query('analyze');
    const { rows } = await t.db.query<{ id: string }>(
      `select id from courier_deliveries where endpoint_id = $1 order by id offset $2 limit 1`,
      [endpointId, DEAD / 2],
    );
    middle = Number(rows[0]!.id);
  });
  afterAll(async () => {
    await t.drop();
  });

  /** The statement's rows, and the rows it read, as the store runs it: after IN_ID_ORDER. */
  const run = (sql: string, params: unknown[]) =>
    t.db.transaction(async (tx) => {
      await tx.query(IN_ID_ORDER);
      return { rows: (await tx.query(sql, params)).rows.length, read: await rowsRead(tx, sql, params) };
    });

  it('lists a page reading about its own rows', async () => {
    const { rows, read } = await run(DEAD_LETTER_PAGE, [endpointId, null, null, middle, PAGE, new Date(now)]);
    expect(rows).toBe(PAGE);
    expect(read).toBeLessThan(5 * PAGE);
  });

  it('takes a replay batch, by publish time too, reading about its own rows', async () => {
    const range = [new Date(now - 1000), new Date(now + 1000)];
    for (const [since, until] of [[null, null], range]) {
      const { rows, read } = await run(DEAD_LETTERS_TO_REPLAY, [
        endpointId,
        null,
        null,
        null,
        PAGE,
        middle,
        since,
        until,
      ]);
      expect(rows).toBe(PAGE);
      expect(read).toBeLessThan(5 * PAGE);
    }
  });
});
