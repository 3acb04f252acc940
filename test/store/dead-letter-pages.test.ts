import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  DEAD_LETTER_PAGE,
  DEAD_LETTERS_TO_REPLAY,
  IN_ID_ORDER,
  inIdOrder,
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
    // Every message dead at the endpoint, the later ones died earlier (message i, i seconds before
    // now); and waiting at the others (scheduled for tomorrow).
    await t.db.query(
      `insert into courier_deliveries (message_id, endpoint_id, state, next_attempt_at, attempts, created_at, updated_at)
       select 'msg_' || lpad(i::text, 8, '0'), e.id, case when e.id = $1::text then 'failed' else 'pending' end,
              $3::timestamptz + interval '1 day', 5, $3, $3::timestamptz - i * interval '1 second'
         from generate_series(1, $4) i cross join unnest($1::text || $2::text[]) e(id) order by i, e.id`,
      [endpointId, others, new Date(now), DEAD],
    );
    await t.db.query('analyze courier_deliveries, courier_messages');
    const { rows } = await t.db.query<{ id: string }>(
      `select id from courier_deliveries where endpoint_id = $1 order by id offset $2 limit 1`,
      [endpointId, DEAD / 2],
    );
    middle = Number(rows[0]!.id);
  });
  afterAll(async () => {
    await t.drop();
  });

  /** The statement's rows, and the rows it read, as the store runs it: after IN_ID_ORDER unless windowed. */
  const run = (sql: string, params: unknown[], window: { since?: number; until?: number } = {}) =>
    t.db.transaction(async (tx) => {
      if (inIdOrder({ endpointId, ...window })) await tx.query(IN_ID_ORDER);
      return { rows: (await tx.query(sql, params)).rows.length, read: await rowsRead(tx, sql, params) };
    });
  /** Dead letters that died in the window of these many seconds, ending that many seconds before now. */
  const window = (ago: number, seconds: number) => ({
    since: now - (ago + seconds) * 1000,
    until: now - ago * 1000,
  });
  const dates = (w: { since?: number; until?: number }) => [
    w.since === undefined ? null : new Date(w.since),
    w.until === undefined ? null : new Date(w.until),
  ];

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

  it('lists and replays a window of when they died reading about the window, not every dead letter before it', async () => {
    // Messages 1,401 to 1,500: listed in id order after the 1,400 before them.
    const w = window(1400, 100);
    const listed = await run(DEAD_LETTER_PAGE, [endpointId, ...dates(w), null, PAGE, new Date(now)], w);
    expect(listed.rows).toBe(PAGE);
    expect(listed.read).toBeLessThan(5 * PAGE);
    const taken = await run(
      DEAD_LETTERS_TO_REPLAY,
      [endpointId, ...dates(w), null, PAGE, null, null, null],
      w,
    );
    expect(taken.rows).toBe(PAGE);
    expect(taken.read).toBeLessThan(5 * PAGE);
    const none = window(-10, 10);
    expect(
      (await run(DEAD_LETTER_PAGE, [endpointId, ...dates(none), null, PAGE, new Date(now)], none)).read,
    ).toBeLessThan(PAGE);
  });
});
