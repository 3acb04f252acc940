/**
 * What courier_endpoint_attempts_total costs a process with COURIER_METRICS_ENDPOINTS at N: an
 * attempt counted (nanoseconds, endpoints met in turn, all named), and a scrape of the whole
 * registry (Node's process figures included) on the process's thread, with its size; then the
 * same scrape with courier_endpoint_info, the endpoints' labels read from a store holding them
 * (PostgreSQL, or PGlite with --pglite), and that read alone. The scrapes' text is checked for
 * the series it should hold.
 * Usage: tsx bench/endpoint-series.ts [endpoints] [--pglite]   (default 2000, COURIER_METRICS_ENDPOINTS' largest; up to 10000)
 */
import { ATTEMPT_RESULTS } from '../src/metrics/endpoint-attempts.ts';
import { CourierMetrics } from '../src/metrics/metrics.ts';
import type { Database } from '../src/store/db.ts';
import type { Completion } from '../src/store/queries/complete.ts';
import { endpointLabels } from '../src/store/queries/endpoint-labels.ts';
import { withStatementTimeout } from '../src/store/statement-timeout.ts';
import { openStore, percentile } from './lib.ts';

const SCRAPES = 20;
/** The endpoints' applications in the store, each with a uid, as the labels' join reads them. */
const APPS = 100;

export interface EndpointSeriesCosts {
  endpoints: number;
  /** courier_endpoint_attempts_total's series, `other`'s four included. */
  series: number;
  /** Per attempt, with and without the endpoint's series (courier_attempts_total and the duration alone). */
  attemptNsWith: number;
  attemptNsWithout: number;
  scrapeMsP50: number;
  scrapeMsMax: number;
  scrapeBytes: number;
  /**
   * With courier_endpoint_info: the scrape (from asked to answered, and the process's thread busy
   * meanwhile: the rest of it waits for the database, free for other work), its size, and the
   * labels' read alone as a scrape makes it (its transaction with a statement timeout).
   */
  withInfo: {
    scrapeMsP50: number;
    scrapeMsMax: number;
    threadMsP50: number;
    threadMsMax: number;
    scrapeBytes: number;
    readMsP50: number;
    readMsMax: number;
  };
}

const completion = (state: Completion['state']): Completion => ({
  deliveryId: 1,
  state,
  attempts: 1,
  nextAttemptAt: null,
  giveUpAt: 0,
  lastError: null,
  streak: 'reset',
  attempt: {
    id: 'atmpt_1',
    number: 1,
    trigger: 0,
    url: 'http://127.0.0.1/',
    startedAt: 0,
    durationMs: 12,
    statusCode: 200,
    failureKind: null,
    responseHeaders: null,
    responseBody: null,
    decision: state === 'pending' ? 'retry' : state,
    delayMs: null,
    reason: null,
    detail: '',
  },
});

function attemptNs(metrics: CourierMetrics, ids: string[], rounds: number): number {
  const done = ATTEMPT_RESULTS.map((r) => completion(r === 'retry' ? 'pending' : r));
  const start = process.hrtime.bigint();
  for (let i = 0; i < rounds; i++) metrics.attempted(done[i & 3]!, ids[i % ids.length]!);
  return Number(process.hrtime.bigint() - start) / rounds;
}

interface Timed<T> {
  p50: number;
  max: number;
  /** The event loop's busy time within each run: the process's thread kept from other work. */
  threadP50: number;
  threadMax: number;
  last: T;
}

/** Median and slowest of SCRAPES runs of `work`, in milliseconds, and its last result. */
async function timed<T>(work: () => Promise<T>): Promise<Timed<T>> {
  const times: number[] = [];
  const busy: number[] = [];
  let last!: T;
  for (let i = 0; i < SCRAPES; i++) {
    const loop = performance.eventLoopUtilization();
    const start = process.hrtime.bigint();
    last = await work();
    times.push(Number(process.hrtime.bigint() - start) / 1e6);
    busy.push(performance.eventLoopUtilization(loop).active);
  }
  return {
    p50: percentile(times, 50),
    max: Math.max(...times),
    threadP50: percentile(busy, 50),
    threadMax: Math.max(...busy),
    last,
  };
}

function seriesOf(text: string, name: string): number {
  return text.split('\n').filter((l) => l.startsWith(`${name}{`)).length;
}

/** The endpoints, written by SQL across APPS applications: what the labels' read looks up. */
async function storeEndpoints(db: Database, ids: string[]): Promise<void> {
  const now = new Date();
  await db.query(
    `insert into courier_applications (id, uid, name, created_at, updated_at)
     select 'app_bench_' || g, 'customer-' || g, 'Bench ' || g, $1, $1 from generate_series(0, $2 - 1) g`,
    [now, APPS],
  );
  await db.query(
    `insert into courier_endpoints (id, app_id, uid, url, rate_limit, max_in_flight, created_at, updated_at)
     select id, 'app_bench_' || (n % $2), 'hook-' || n, 'http://127.0.0.1:1/', 100, 10, $3, $3
       from unnest($1::text[]) with ordinality as e(id, n)`,
    [ids, APPS, now],
  );
}

export async function measureEndpointSeries(
  endpoints: number,
  embedded = false,
): Promise<EndpointSeriesCosts> {
  const ids = Array.from({ length: endpoints }, (_, i) => `ep_${String(i).padStart(26, '0')}`);
  const rounds = Math.max(200_000, endpoints * 20);
  const without = new CourierMetrics();
  attemptNs(without, ids, rounds); // warm-up
  const attemptNsWithout = attemptNs(without, ids, rounds);
  const metrics = new CourierMetrics({ endpointSeries: endpoints });
  attemptNs(metrics, ids, rounds); // gives every endpoint a place
  await metrics.registry.metrics(); // shows them at 0: each counts its own attempts from now on
  attemptNs(metrics, ids, rounds); // warm
  const attemptNsWith = attemptNs(metrics, ids, rounds);
  const scrape = await timed(() => metrics.registry.metrics());
  const series = seriesOf(scrape.last, 'courier_endpoint_attempts_total');
  if (series !== (endpoints + 1) * ATTEMPT_RESULTS.length) {
    throw new Error(`the scrape held ${series} endpoint series; expected ${(endpoints + 1) * 4}`);
  }
  const store = await openStore('bench_endpoint_series', embedded);
  try {
    await storeEndpoints(store.db, ids);
    await store.analyze();
    const described = new CourierMetrics({ endpointSeries: endpoints });
    described.watchEndpoints(store.db);
    attemptNs(described, ids, ids.length);
    const read = await timed(() => withStatementTimeout(store.db, 2_000, (q) => endpointLabels(q, ids)));
    const withInfo = await timed(() => described.registry.metrics());
    const info = seriesOf(withInfo.last, 'courier_endpoint_info');
    if (read.last.length !== endpoints || info !== endpoints) {
      throw new Error(`${read.last.length} endpoints read and ${info} info series; expected ${endpoints}`);
    }
    return {
      endpoints,
      series,
      attemptNsWith,
      attemptNsWithout,
      scrapeMsP50: scrape.p50,
      scrapeMsMax: scrape.max,
      scrapeBytes: Buffer.byteLength(scrape.last),
      withInfo: {
        scrapeMsP50: withInfo.p50,
        scrapeMsMax: withInfo.max,
        threadMsP50: withInfo.threadP50,
        threadMsMax: withInfo.threadMax,
        scrapeBytes: Buffer.byteLength(withInfo.last),
        readMsP50: read.p50,
        readMsMax: read.max,
      },
    };
  } finally {
    await store.drop();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const args = process.argv.slice(2);
  const embedded = args.includes('--pglite');
  const arg = args.find((a) => a !== '--pglite') ?? '2000';
  const endpoints = Number(arg);
  if (!Number.isInteger(endpoints) || endpoints < 1 || endpoints > 10_000) {
    console.error(`usage: tsx bench/endpoint-series.ts [endpoints] [--pglite]  (1 to 10000; not ${arg})`);
    process.exit(2);
  }
  console.log(JSON.stringify(await measureEndpointSeries(endpoints, embedded)));
}
