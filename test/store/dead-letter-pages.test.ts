import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  CHOSEN_DEAD_LETTERS_TO_REPLAY,
  DEAD_LETTER_PAGE,
  DEAD_LETTER_PAGE_OF_WINDOW,
  DEAD_LETTERS_IN_WINDOW,
  DEAD_LETTERS_TO_REPLAY,
  DEAD_LETTERS_TO_REPLAY_OF_WINDOW,
  type DeadLetterFilter,
  listDeadLetters,
  replayAllDeadLetters,
  replayDeadLetters,
  WINDOW_SORTED_PAGES,
} from '../../src/store/queries/dead-letter.ts';
import { BACKENDS, openTestDatabase, type TestDatabase } from '../support/databases.ts';
import { makeApp, makeDeadLetters, makeEndpoint } from '../support/fixtures.ts';
import { recordingReads } from '../support/plans.ts';

const DEAD = 2000;
/** Other endpoints, each with a delivery of every message: the endpoint's rows are 1 in 10 by id. */
const OTHERS = 9;
const PAGE = 100;

/**
 * A page of dead letters, listed or replayed, reads about its own rows: not every dead letter of
 * the endpoint (sorted to take the first after the last page), nor every message (hashed), which
 * made going through an endpoint's N dead letters cost O(N²). Checked through the store's own
 * functions, with the rows their page statements read counted by EXPLAIN ANALYZE.
 */
describe.each(BACKENDS)('pages of dead letters on %s', (backend) => {
  let t: TestDatabase;
  let endpointId: string;
  let middle: number;
  let others: string[];
  const now = Date.UTC(2026, 0, 1, 12);

  beforeAll(async () => {
    t = await openTestDatabase(backend);
    const app = await makeApp(t.db, now);
    endpointId = (await makeEndpoint(t.db, app.id, now, { url: 'http://127.0.0.1:1/a' })).id;
    others = [];
    for (let i = 0; i < OTHERS; i++)
      others.push((await makeEndpoint(t.db, app.id, now, { url: `http://127.0.0.1:1/${i}` })).id);
    // Every message dead at the endpoint, the later ones died earlier; waiting at the others.
    await makeDeadLetters(t.db, app.id, [endpointId, ...others], DEAD, now);
    await t.db.query('analyze courier_deliveries, courier_messages');
    const { rows } = await t.db.query<{ id: string }>(
      `select id from courier_deliveries where endpoint_id = $1 order by id offset $2 limit 1`,
      [endpointId, DEAD / 2],
    );
    middle = Number(rows[0]!.id);
  });
  afterEach(async () => {
    // What a test replayed dies again, when it did.
    await t.db.query(
      `update courier_deliveries set state = 'failed', attempts = 5,
              updated_at = $2::timestamptz - substring(message_id from 5)::int * interval '1 second'
        where endpoint_id = $1 and state <> 'failed'`,
      [endpointId, new Date(now)],
    );
  });
  afterAll(async () => {
    await t.drop();
  });

  type Filter = Partial<DeadLetterFilter> & { afterId?: number };
  /** A page listed, with the rows and indexes read by each run of the statements `watched`. */
  const list = async (filter: Filter, watched = [DEAD_LETTER_PAGE]) => {
    const recorded = recordingReads(t.db, watched);
    const page = await listDeadLetters(recorded.db, { endpointId, limit: PAGE, now, ...filter });
    return { ...recorded, rows: page.length, lastId: page.at(-1)?.deliveryId };
  };
  /** A batch replayed, with the rows and indexes read by each run of the statements `watched`. */
  const replay = async (filter: Filter, watched = [DEAD_LETTERS_TO_REPLAY]) => {
    const recorded = recordingReads(t.db, watched);
    const { replayed, lastId } = await replayDeadLetters(
      recorded.db,
      { endpointId, limit: PAGE, ...filter },
      now,
    );
    return { ...recorded, rows: replayed, lastId: lastId ?? undefined };
  };
  /** The endpoint's dead letters as a plain statement finds them, in id order. */
  const deadIds = async (filter: Filter = {}) => {
    const at = (ms?: number) => (ms === undefined ? null : new Date(ms));
    const { rows } = await t.db.query<{ id: string }>(
      `select d.id from courier_deliveries d join courier_messages m on m.id = d.message_id
        where d.endpoint_id = $1 and d.state in ('failed', 'expired')
          and ($2::timestamptz is null or d.updated_at >= $2) and ($3::timestamptz is null or d.updated_at < $3)
          and ($4::timestamptz is null or m.created_at >= $4) and ($5::timestamptz is null or m.created_at < $5)
        order by d.id`,
      [endpointId, at(filter.since), at(filter.until), at(filter.sentSince), at(filter.sentUntil)],
    );
    return rows.map((r) => Number(r.id));
  };
  /** Replays every dead letter `filter` takes, and checks exactly `wanted` left the dead letters. */
  const replaysExactly = async (filter: Filter, wanted: number[]) => {
    const before = await deadIds();
    expect(await replayAllDeadLetters(t.db, { endpointId, ...filter }, now)).toBe(wanted.length);
    const replayed = new Set(wanted);
    expect(await deadIds()).toEqual(before.filter((id) => !replayed.has(id)));
  };
  /** The instant `minutes` before now: message i was published 2 × DEAD − i minutes before now. */
  const publishedAgo = (minutes: number) => now - minutes * 60_000;
  /** Dead letters that died in the `seconds` ending `ago` seconds before now. */
  const diedWithin = (ago: number, seconds: number) => ({
    since: now - (ago + seconds) * 1000,
    until: now - ago * 1000,
  });

  it('lists a page reading about its own rows', async () => {
    const { rows, reads } = await list({ afterId: middle });
    expect(rows).toBe(PAGE);
    expect(reads).toHaveLength(1);
    expect(reads[0]).toBeLessThan(5 * PAGE);
  });

  it('replays a batch, by publish time too, reading about its own rows', async () => {
    // Every message was published in the 2 × DEAD minutes before now.
    for (const range of [{}, { sentSince: publishedAgo(2 * DEAD), sentUntil: now }]) {
      const { rows, reads } = await replay({ afterId: middle, ...range });
      expect(rows).toBe(PAGE);
      expect(reads).toHaveLength(1);
      expect(reads[0]).toBeLessThan(5 * PAGE);
    }
  });

  it('lists and replays a narrow window of when they died on the index by that time, reading about the window', async () => {
    // Messages 1,401 to 1,500: in id order, after the 1,400 before them.
    for (const [run, watched] of [
      [list, DEAD_LETTER_PAGE_OF_WINDOW],
      [replay, DEAD_LETTERS_TO_REPLAY_OF_WINDOW],
    ] as const) {
      const { rows, reads, indexes } = await run(diedWithin(1400, 100), [DEAD_LETTERS_IN_WINDOW, watched]);
      expect(rows).toBe(PAGE);
      expect(reads).toHaveLength(2);
      expect(reads[1]).toBeLessThan(5 * PAGE);
      // Counted, then read, on the index by when they died.
      expect(indexes.map((i) => i.includes('courier_deliveries_dead'))).toEqual([true, true]);
    }
    const none = await list(diedWithin(-10, 10), [DEAD_LETTER_PAGE_OF_WINDOW]);
    expect(none.rows).toBe(0);
    expect(none.reads).toHaveLength(1);
    expect(none.reads[0]).toBeLessThan(PAGE);
  });

  it('lists and replays a wide window of when they died in id order, reading each dead letter once, not once a page', async () => {
    // Those that died before 500 s ago: messages 501 to 2,000, the endpoint's highest ids. Sorted,
    // each of the 15 pages would read all 1,500 of them. (The replay's last batches are read
    // sorted: what it replayed has left the window, narrowed to a few pages.)
    const window = { until: now - 500 * 1000 };
    for (const [run, watched] of [
      [list, [DEAD_LETTER_PAGE, DEAD_LETTER_PAGE_OF_WINDOW]],
      [replay, [DEAD_LETTERS_TO_REPLAY, DEAD_LETTERS_TO_REPLAY_OF_WINDOW]],
    ] as const) {
      let afterId: number | undefined;
      let rows = 0;
      const reads: number[] = [];
      for (;;) {
        const page = await run({ ...window, afterId }, [...watched]);
        rows += page.rows;
        reads.push(...page.reads);
        if (page.lastId === undefined) break;
        afterId = page.lastId;
      }
      expect(rows).toBe(DEAD - 500);
      expect(reads).toHaveLength((DEAD - 500) / PAGE + 1);
      // The first page passes by the 500 dead letters before the window in the index, without
      // reading their rows.
      expect(reads[0]).toBeLessThan(3 * PAGE);
      // Each dead letter and its message once: about 3,000 rows.
      expect(reads.reduce((a, b) => a + b)).toBeLessThan(4 * (DEAD - 500));
    }
  });

  it('reads a window of fewer than two pages sorted, and one of two pages or more in id order', async () => {
    const pages = WINDOW_SORTED_PAGES * PAGE;
    for (const [size, watched] of [
      [pages - 1, DEAD_LETTER_PAGE_OF_WINDOW],
      [pages, DEAD_LETTER_PAGE],
    ] as const) {
      const { rows, reads } = await list(diedWithin(1000, size), [watched]);
      expect(rows).toBe(PAGE);
      expect(reads).toHaveLength(1);
    }
  });

  it.each([
    ['since alone, narrow', { since: now - 150_000 }],
    ['since alone, wide', { since: now - 1000_000 }],
    ['until alone, narrow', { until: now - 1900_000 }],
    ['until alone, wide', { until: now - 500_000 }],
    ['both, narrow', diedWithin(700, 50)],
    ['both, wide', diedWithin(300, 900)],
  ])(
    'lists and replays exactly the dead letters of a window, in id order, whichever way it is read: %s',
    async (_, window) => {
      const wanted = await deadIds(window);
      const listed: number[] = [];
      for (;;) {
        const page = await listDeadLetters(t.db, {
          endpointId,
          limit: PAGE,
          now,
          afterId: listed.at(-1),
          ...window,
        });
        listed.push(...page.map((d) => d.deliveryId));
        if (page.length < PAGE) break;
      }
      expect(listed).toEqual(wanted);
      await replaysExactly(window, wanted);
    },
  );

  it('recovers a range of publish times after most dead letters in id order, passing them by in the index', async () => {
    // Messages 1,901 to 2,000, published in the last 100 of the minutes the messages were
    // published in (one a minute), the endpoint's highest ids. A recovery read the 1,900 before
    // them, and each one's message.
    const { rows, reads } = await replay({ sentSince: publishedAgo(DEAD + 99) });
    expect(rows).toBe(PAGE);
    expect(reads).toHaveLength(1);
    // Those made in the hour before the range are read too (clocks may be that far apart).
    expect(reads[0]).toBeLessThan(5 * PAGE);
  });

  it.each([
    ['since, the last 100', { sentSince: publishedAgo(DEAD + 99) }],
    ['since and until', { sentSince: publishedAgo(DEAD + 1500), sentUntil: publishedAgo(DEAD + 200) }],
    ['until alone', { sentUntil: publishedAgo(DEAD + 1000) }],
    ['with a window of when they died', { sentSince: publishedAgo(DEAD + 1500), ...diedWithin(300, 900) }],
  ])('recovers exactly the dead letters whose messages were published in the range: %s', async (_, range) => {
    const wanted = await deadIds(range);
    expect(wanted.length).toBeGreaterThan(0);
    await replaysExactly(range, wanted);
  });

  it('recovers a dead letter made up to an hour before its message, as an earlier release could', async () => {
    // Message 1,901's delivery stamped half an hour before it by a resend whose clock was behind.
    const first = 'msg_0000001901';
    const made = (minutes: number) =>
      t.db.query(
        `update courier_deliveries d set created_at = m.created_at - $3 * interval '1 minute'
           from courier_messages m where m.id = d.message_id and d.message_id = $1 and d.endpoint_id = $2`,
        [first, endpointId, minutes],
      );
    await made(30);
    try {
      const recovered = await replayAllDeadLetters(
        t.db,
        { endpointId, sentSince: publishedAgo(DEAD + 99) },
        now,
      );
      expect(recovered).toBe(100);
    } finally {
      await made(0);
    }
  });

  it('replays chosen dead letters reading about them, on statistics taken before they died', async () => {
    // Statistics taken while no delivery was dead; then another endpoint's deliveries all die: the
    // planner expects none there, and an endpoint-first plan walks them all.
    const other = others[0]!;
    const setState = (state: string, endpoints: string[]) =>
      t.db.query('update courier_deliveries set state = $1 where endpoint_id = any($2)', [state, endpoints]);
    await setState('pending', [endpointId]);
    await t.db.query('analyze courier_deliveries');
    await setState('failed', [endpointId, other]);
    try {
      const { rows } = await t.db.query<{ id: string }>(
        'select id from courier_deliveries where endpoint_id = $1 order by id desc limit 3',
        [other],
      );
      const recorded = recordingReads(t.db, [DEAD_LETTERS_TO_REPLAY, CHOSEN_DEAD_LETTERS_TO_REPLAY]);
      const deliveryIds = rows.map((r) => Number(r.id));
      const { replayed } = await replayDeadLetters(
        recorded.db,
        { endpointId: other, deliveryIds, limit: deliveryIds.length },
        now,
      );
      expect(replayed).toBe(3);
      expect(recorded.reads).toHaveLength(1);
      expect(recorded.reads[0]).toBeLessThan(50);
    } finally {
      await setState('pending', [other]);
      await t.db.query('analyze courier_deliveries');
    }
  });
});
