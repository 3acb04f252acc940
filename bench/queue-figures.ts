/**
 * What a Prometheus scrape costs the database: the reads behind `courier_queue_lag_seconds`,
 * `courier_queue_deliveries` and `courier_dead_letters`, with N deliveries scheduled for later (a backlog of retries or
 * delayed messages) and M dead letters, beside 1,000 due (10 of them claimed) and 100 held. The
 * rows are written by SQL, not published; the counts read are checked against them.
 * Usage: tsx bench/queue-figures.ts [scheduled] [deadLetters] [--pglite]   (default 1000000 each)
 */
import { claimableSince, deadLetterCount, queueDepth } from '../src/store/queries/queue-figures.ts';
import { makeApp, makeEndpoint } from '../test/support/fixtures.ts';
import { openStore } from './lib.ts';

const DUE = 1_000;
/** Of the due, claimed by a worker (leased, counted in their endpoints' in_flight). */
const CLAIMED = 10;
const HELD = 100;
const READS = 20;

export interface QueueFigureCosts {
  scheduled: number;
  deadLetters: number;
  /** Milliseconds per read: median and slowest of READS. */
  lagMsP50: number;
  lagMsMax: number;
  /** Just written: the visibility map not yet set. */
  depthMsP50: number;
  depthMsMax: number;
  /** After a vacuum. */
  depthVacuumedMsP50: number;
  depthVacuumedMsMax: number;
  /** The dead letters counted, just written and after the vacuum. */
  deadLettersMsP50: number;
  deadLettersMsMax: number;
  deadLettersVacuumedMsP50: number;
  deadLettersVacuumedMsMax: number;
}

export async function measureQueueFigures(
  scheduled: number,
  deadLetters: number,
  embedded = false,
): Promise<QueueFigureCosts> {
  const store = await openStore('bench_queue_figures', embedded);
  const { db } = store;
  try {
    const now = Date.now();
    const app = await makeApp(db, now);
    const endpoints: string[] = [];
    for (let i = 0; i < 10; i++) {
      endpoints.push((await makeEndpoint(db, app.id, now, { url: `http://127.0.0.1:1/${i}` })).id);
    }
    const total = scheduled + DUE + HELD + deadLetters;
    await db.query(
      `insert into courier_messages (id, app_id, event_type, payload, created_at)
       select 'msg_q_' || g, $1, 'bench', '\\x7b7d', $2 from generate_series(1, $3) g`,
      [app.id, new Date(now), total],
    );
    // In order: DUE due a second ago, HELD held, the dead letters, the rest due a day ahead.
    await db.query(
      `insert into courier_deliveries (message_id, endpoint_id, state, next_attempt_at, created_at, updated_at)
       select 'msg_q_' || g, ($1::text[])[1 + g % 10],
              case when g <= $3 then 'pending' when g <= $3 + $4 then 'held'
                   when g <= $3 + $4 + $5 then 'failed' else 'pending' end,
              case when g <= $3 then $2::timestamptz - interval '1 second' else $2::timestamptz + interval '1 day' end,
              $2, $2
         from generate_series(1, $6) g`,
      [endpoints, new Date(now), DUE, HELD, deadLetters, total],
    );
    await db.query(
      `update courier_deliveries set lease_owner = 'bench', lease_expires_at = $1::timestamptz + interval '1 minute'
        where message_id = any(array(select 'msg_q_' || g from generate_series(1, $2) g))`,
      [new Date(now), CLAIMED],
    );
    await db.query(
      `update courier_endpoint_queues q
          set next_due_at = $1::timestamptz - interval '1 second',
              in_flight = (select count(*) from courier_deliveries d
                            where d.endpoint_id = q.endpoint_id and d.lease_owner is not null)`,
      [new Date(now)],
    );
    await store.analyze();
    const timed = async <T>(read: () => Promise<T>) => {
      const times: number[] = [];
      let last!: T;
      for (let i = 0; i < READS; i++) {
        const started = performance.now();
        last = await read();
        times.push(performance.now() - started);
      }
      times.sort((a, b) => a - b);
      const ms = (t: number) => Math.round(t * 100) / 100;
      return { last, p50: ms(times[Math.floor(READS / 2)]!), max: ms(times[READS - 1]!) };
    };
    const lag = await timed(() => claimableSince(db, Date.now()));
    const depth = await timed(() => queueDepth(db, Date.now()));
    const deadFresh = await timed(() => deadLetterCount(db));
    // As autovacuum leaves the table in time: the visibility map set, the counts index-only.
    await db.query('vacuum analyze courier_deliveries');
    const vacuumed = await timed(() => queueDepth(db, Date.now()));
    const dead = await timed(() => deadLetterCount(db));
    for (const read of [deadFresh, dead])
      if (read.last !== deadLetters)
        throw new Error(`counted ${read.last} dead letters; expected ${deadLetters}`);
    const want = { due: DUE - CLAIMED, scheduled, inFlight: CLAIMED, held: HELD };
    for (const read of [depth, vacuumed]) {
      if (lag.last === null || JSON.stringify(read.last) !== JSON.stringify(want)) {
        throw new Error(
          `read lag since ${lag.last}, ${JSON.stringify(read.last)}; expected ${JSON.stringify(want)}`,
        );
      }
    }
    return {
      scheduled,
      deadLetters,
      lagMsP50: lag.p50,
      lagMsMax: lag.max,
      depthMsP50: depth.p50,
      depthMsMax: depth.max,
      depthVacuumedMsP50: vacuumed.p50,
      depthVacuumedMsMax: vacuumed.max,
      deadLettersMsP50: deadFresh.p50,
      deadLettersMsMax: deadFresh.max,
      deadLettersVacuumedMsP50: dead.p50,
      deadLettersVacuumedMsMax: dead.max,
    };
  } finally {
    await store.drop();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const args = process.argv.slice(2);
  const [scheduled = 1_000_000, deadLetters = 1_000_000] = args
    .filter((a) => !a.startsWith('--'))
    .map(Number);
  if (![scheduled, deadLetters].every((n) => Number.isInteger(n) && n >= 0)) {
    console.error(
      `usage: tsx bench/queue-figures.ts [scheduled] [deadLetters] [--pglite]  (whole numbers; not ${args.join(' ')})`,
    );
    process.exit(2);
  }
  const embedded = args.includes('--pglite');
  console.log(
    JSON.stringify({
      store: embedded ? 'pglite' : 'postgresql',
      ...(await measureQueueFigures(scheduled, deadLetters, embedded)),
    }),
  );
}
