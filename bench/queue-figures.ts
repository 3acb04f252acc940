/**
 * What a Prometheus scrape costs the database: the two reads behind `courier_queue_lag_seconds`
 * and `courier_queue_deliveries`, with N deliveries scheduled for later (a backlog of retries or
 * delayed messages), 1,000 due and 100 held. The rows are written by SQL, not published; the
 * counts read are checked against them.
 * Usage: tsx bench/queue-figures.ts [scheduled] [--pglite]   (default 1000000)
 */
import { claimableSince, queueDepth } from '../src/store/queries/queue-figures.ts';
import { makeApp, makeEndpoint } from '../test/support/fixtures.ts';
import { openStore } from './lib.ts';

const DUE = 1_000;
const HELD = 100;
const READS = 20;

export interface QueueFigureCosts {
  scheduled: number;
  /** Milliseconds per read: median and slowest of READS. */
  lagMsP50: number;
  lagMsMax: number;
  depthMsP50: number;
  depthMsMax: number;
}

export async function measureQueueFigures(scheduled: number, embedded = false): Promise<QueueFigureCosts> {
  const store = await openStore('bench_queue_figures', embedded);
  const { db } = store;
  try {
    const now = Date.now();
    const app = await makeApp(db, now);
    const endpoints: string[] = [];
    for (let i = 0; i < 10; i++) {
      endpoints.push((await makeEndpoint(db, app.id, now, { url: `http://127.0.0.1:1/${i}` })).id);
    }
    const total = scheduled + DUE + HELD;
    await db.query(
      `insert into courier_messages (id, app_id, event_type, payload, created_at)
       select 'msg_q_' || g, $1, 'bench', '\\x7b7d', $2 from generate_series(1, $3) g`,
      [app.id, new Date(now), total],
    );
    // The first DUE are due a second ago, the next HELD held, the rest due a day ahead.
    await db.query(
      `insert into courier_deliveries (message_id, endpoint_id, state, next_attempt_at, created_at, updated_at)
       select 'msg_q_' || g, ($1::text[])[1 + g % 10],
              case when g > $3 and g <= $3 + $4 then 'held' else 'pending' end,
              case when g <= $3 then $2::timestamptz - interval '1 second' else $2::timestamptz + interval '1 day' end,
              $2, $2
         from generate_series(1, $5) g`,
      [endpoints, new Date(now), DUE, HELD, total],
    );
    await db.query(`update courier_endpoint_queues set next_due_at = $1::timestamptz - interval '1 second'`, [
      new Date(now),
    ]);
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
    const want = { due: DUE, scheduled, inFlight: 0, held: HELD };
    if (lag.last === null || JSON.stringify(depth.last) !== JSON.stringify(want)) {
      throw new Error(
        `read lag since ${lag.last}, ${JSON.stringify(depth.last)}; expected ${JSON.stringify(want)}`,
      );
    }
    return { scheduled, lagMsP50: lag.p50, lagMsMax: lag.max, depthMsP50: depth.p50, depthMsMax: depth.max };
  } finally {
    await store.drop();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const args = process.argv.slice(2);
  const [scheduled = 1_000_000] = args.filter((a) => !a.startsWith('--')).map(Number);
  if (!Number.isInteger(scheduled) || scheduled < 0) {
    console.error(
      `usage: tsx bench/queue-figures.ts [scheduled] [--pglite]  (a whole number; not ${args.join(' ')})`,
    );
    process.exit(2);
  }
  const embedded = args.includes('--pglite');
  console.log(
    JSON.stringify({
      store: embedded ? 'pglite' : 'postgresql',
      ...(await measureQueueFigures(scheduled, embedded)),
    }),
  );
}
