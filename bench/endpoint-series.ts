/**
 * What courier_endpoint_attempts_total costs a process with COURIER_METRICS_ENDPOINTS at N: an
 * attempt counted (nanoseconds, endpoints met in turn, all named), and a scrape of the whole
 * registry (Node's process figures included) on the process's thread, with its size. The scrape's
 * text is checked for the series it should hold.
 * Usage: tsx bench/endpoint-series.ts [endpoints]   (default 2000, COURIER_METRICS_ENDPOINTS' largest; up to 10000)
 */
import { ATTEMPT_RESULTS } from '../src/metrics/endpoint-attempts.ts';
import { CourierMetrics } from '../src/metrics/metrics.ts';
import type { Completion } from '../src/store/queries/complete.ts';
import { percentile } from './lib.ts';

const SCRAPES = 20;

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

export async function measureEndpointSeries(endpoints: number): Promise<EndpointSeriesCosts> {
  const ids = Array.from({ length: endpoints }, (_, i) => `ep_${String(i).padStart(26, '0')}`);
  const rounds = Math.max(200_000, endpoints * 20);
  const without = new CourierMetrics();
  attemptNs(without, ids, rounds); // warm-up
  const attemptNsWithout = attemptNs(without, ids, rounds);
  const metrics = new CourierMetrics({ endpointSeries: endpoints });
  attemptNs(metrics, ids, rounds); // names every endpoint, then warm
  const attemptNsWith = attemptNs(metrics, ids, rounds);
  const times: number[] = [];
  let text = '';
  for (let i = 0; i < SCRAPES; i++) {
    const start = process.hrtime.bigint();
    text = await metrics.registry.metrics();
    times.push(Number(process.hrtime.bigint() - start) / 1e6);
  }
  const series = text.split('\n').filter((l) => l.startsWith('courier_endpoint_attempts_total{')).length;
  if (series !== (endpoints + 1) * ATTEMPT_RESULTS.length) {
    throw new Error(`the scrape held ${series} endpoint series; expected ${(endpoints + 1) * 4}`);
  }
  return {
    endpoints,
    series,
    attemptNsWith,
    attemptNsWithout,
    scrapeMsP50: percentile(times, 50),
    scrapeMsMax: Math.max(...times),
    scrapeBytes: Buffer.byteLength(text),
  };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const arg = process.argv[2] ?? '2000';
  const endpoints = Number(arg);
  if (!Number.isInteger(endpoints) || endpoints < 1 || endpoints > 10_000) {
    console.error(`usage: tsx bench/endpoint-series.ts [endpoints]  (1 to 10000; not ${arg})`);
    process.exit(2);
  }
  console.log(JSON.stringify(await measureEndpointSeries(endpoints)));
}
