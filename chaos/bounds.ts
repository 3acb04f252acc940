/**
 * `npm run bounds`: resource bounds of one worker process.
 * 1. Head-of-line isolation: a healthy endpoint's latency while a dead endpoint (connections
 *    accepted, never answered) holds a deep backlog, against the same run without it.
 * 2. Memory: the worker's peak RSS, every 15 s of a 90 s drain of 1,000,000 deliveries due at once.
 * 3. Storage: how fast retention deletes finished history, and what a sweep costs when the oldest
 *    messages must stay (retries under an endpoint's retry window longer than the retention).
 */
import { createServer } from 'node:net';
import {
  analyzeSchema,
  cliWording,
  courierCli,
  payload,
  peakRssMiB,
  percentile,
  preciseNow,
  startReceiver,
  waitFor,
  walBytes,
} from '../bench/lib.ts';
import { bulkDeliveries, setupCourier, startWorkers } from '../bench/scenarios/courier.ts';
import { buildDist } from '../scripts/build.ts';
import { systemClock } from '../src/clock.ts';
import { PURGE_BATCH, PURGE_STATEMENTS_PER_SWEEP, RetentionSweeper } from '../src/dispatch/retention.ts';
import { idsBefore, newId } from '../src/ids.ts';
import { generateSecret } from '../src/signing/index.ts';
import { publish } from '../src/store/publisher.ts';
import { createEndpoint } from '../src/store/repos/endpoints.ts';

const DUE = Number(process.env.COURIER_BOUNDS_DUE ?? 1_000_000);
/** How long the worker drains the due backlog; its peak RSS is read every CHECKPOINT_S seconds. */
const DRAIN_S = Number(process.env.COURIER_BOUNDS_SECONDS ?? 90);
const CHECKPOINT_S = 15;
/** Finished messages (1 KiB, one attempt each) past the retention period, behind RETRYING that must stay. */
const PURGE = Number(process.env.COURIER_BOUNDS_PURGE ?? 200_000);
const RETRYING = 20_000;
const DAY = 86_400_000;

/** Latency of 500 messages to a healthy endpoint, with or without a dead endpoint's backlog. */
async function healthyLatency(withDeadBacklog: boolean): Promise<{ p50: number; p99: number }> {
  const receiver = await startReceiver();
  const setup = await setupCourier(receiver);
  const blackhole = createServer(() => {}); // accepts, never answers: every request hits its deadline
  await new Promise<void>((resolve) => blackhole.listen(0, '127.0.0.1', resolve));
  try {
    if (withDeadBacklog) {
      const now = systemClock.now();
      const port = (blackhole.address() as { port: number }).port;
      await setup.db.transaction((tx) =>
        createEndpoint(tx, {
          id: newId('ep', now),
          appId: setup.appId,
          fields: {
            url: `http://127.0.0.1:${port}/dead`,
            eventTypes: ['dead'],
            maxInFlight: 10,
            rateLimit: 1000,
          },
          secret: generateSecret(),
          now,
        }),
      );
      for (let i = 0; i < 2_000; i++) {
        const t = systemClock.now();
        await publish(setup.db, {
          appId: setup.appId,
          messageId: newId('msg', t),
          eventType: 'dead',
          payload: Buffer.from('{}'),
          now: t,
        });
      }
    }
    const workers = await startWorkers(setup.schema, 1, {
      COURIER_REQUEST_TIMEOUT: '5s',
      COURIER_LEASE: '15s',
    });
    await receiver.reset();
    for (let i = 0; i < 500; i++) {
      const t = systemClock.now();
      await publish(setup.db, {
        appId: setup.appId,
        messageId: newId('msg', t),
        eventType: `e${i % 20}`,
        payload: Buffer.from(payload(preciseNow())),
        now: t,
      });
      await new Promise((resolve) => setTimeout(resolve, 4));
    }
    let stats = await receiver.stats();
    await waitFor(
      async () => {
        stats = await receiver.stats();
        return stats.count >= 500;
      },
      60_000,
      'healthy deliveries',
    );
    await Promise.all(workers.map((w) => w.stop('SIGKILL')));
    return { p50: percentile(stats.latencies, 50), p99: percentile(stats.latencies, 99) };
  } finally {
    blackhole.close();
    await setup.close();
    await receiver.stop();
  }
}

interface MemoryCheckpoint {
  seconds: number;
  peakRssMiB: number | null;
  delivered: number;
}

/** Whether the heap levels off under a sustained drain: the peak RSS so far, every CHECKPOINT_S. */
async function memoryWithDueBacklog(): Promise<MemoryCheckpoint[]> {
  const receiver = await startReceiver();
  const setup = await setupCourier(receiver);
  try {
    await bulkDeliveries(setup, DUE, systemClock.now());
    await receiver.reset();
    const [worker] = await startWorkers(setup.schema, 1);
    const checkpoints: MemoryCheckpoint[] = [];
    for (let seconds = CHECKPOINT_S; seconds <= DRAIN_S; seconds += CHECKPOINT_S) {
      await new Promise((resolve) => setTimeout(resolve, CHECKPOINT_S * 1000));
      const delivered = (await receiver.stats()).count;
      checkpoints.push({ seconds, peakRssMiB: peakRssMiB(worker!.proc.pid), delivered });
      if (delivered >= DUE) break;
    }
    await worker!.stop('SIGKILL');
    return checkpoints;
  } finally {
    await setup.close();
    await receiver.stop();
  }
}

interface RetentionFigures {
  purgedPerSec: number;
  walBytesPerMessage: number;
  slowestSweepMs: number;
  /** A sweep that finds only the retrying messages: the steady cost of the history that must stay. */
  retryingOnlySweepMs: number;
  kept: number;
}

async function retentionSweeps(): Promise<RetentionFigures> {
  const receiver = await startReceiver();
  const setup = await setupCourier(receiver);
  try {
    const now = systemClock.now();
    // Ids as the publisher makes them: the creation time's ULID prefix, the retrying ones older.
    const retryingPrefix = idsBefore('msg', now - 100 * DAY);
    const donePrefix = idsBefore('msg', now - 99 * DAY);
    const id = (prefix: string) => `${prefix} || lpad(g::text, 16, '0')`;
    const then = new Date(now - 99 * DAY);
    await setup.db.query(
      `insert into courier_messages (id, app_id, event_type, payload, created_at)
       select ${id('$1')}, $3, 'bulk', convert_to(repeat('x', 1024), 'UTF8'), $4::timestamptz from generate_series(1, $5) g
       union all
       select ${id('$2')}, $3, 'bulk', convert_to(repeat('x', 1024), 'UTF8'), $4::timestamptz from generate_series(1, $6) g`,
      [retryingPrefix, donePrefix, setup.appId, then, RETRYING, PURGE],
    );
    const { rows } = await setup.db.query<{ id: string }>('select id from courier_endpoints limit 1');
    await setup.db.query(
      `insert into courier_deliveries (message_id, endpoint_id, state, next_attempt_at, created_at, updated_at)
       select ${id('$1')}, $2, 'pending', $3::timestamptz + interval '1 year', $3, $3 from generate_series(1, $4) g`,
      [retryingPrefix, rows[0]!.id, then, RETRYING],
    );
    await setup.db.query(
      `insert into courier_attempts (id, delivery_id, message_id, endpoint_id, number, url, started_at,
         duration_ms, status_code, decision, detail)
       select 'atmpt_' || g, g, ${id('$1')}, $2, 1, 'http://127.0.0.1/ep0', $3, 1, 200, 'delivered', 'ok'
         from generate_series(1, $4) g`,
      [donePrefix, rows[0]!.id, then, PURGE],
    );
    await analyzeSchema(setup.schema, { vacuum: true });
    await setup.db.query('checkpoint');

    const sweeper = new RetentionSweeper(setup.db, 90 * DAY);
    const wal0 = await walBytes();
    const started = performance.now();
    let purged = 0;
    let slowestSweepMs = 0;
    // Each sweep looks at a bounded number: one pass over the range takes this many.
    const sweepsPerPass = Math.ceil((PURGE + RETRYING) / (PURGE_BATCH * PURGE_STATEMENTS_PER_SWEEP));
    for (let sweeps = 0; purged < PURGE; sweeps++) {
      if (sweeps > sweepsPerPass) throw new Error(`retention stopped after ${purged} of ${PURGE} messages`);
      const sweepStarted = performance.now();
      purged += (await sweeper.sweep(now)).messages;
      slowestSweepMs = Math.max(slowestSweepMs, performance.now() - sweepStarted);
    }
    const purgedPerSec = purged / ((performance.now() - started) / 1000);
    const walBytesPerMessage = ((await walBytes()) - wal0) / purged;
    const retryingStarted = performance.now();
    // From the start of the range, as after a restart or a finished pass.
    const last = await new RetentionSweeper(setup.db, 90 * DAY).sweep(now);
    const retryingOnlySweepMs = performance.now() - retryingStarted;
    if (last.messages !== 0) throw new Error('a sweep deleted a message whose delivery is retrying');
    const { rows: kept } = await setup.db.query<{ n: number }>(
      'select count(*)::int as n from courier_messages',
    );
    return { purgedPerSec, walBytesPerMessage, slowestSweepMs, retryingOnlySweepMs, kept: kept[0]!.n };
  } finally {
    await setup.close();
    await receiver.stop();
  }
}

// Its workers run the compiled CLI, as the bench's: sources run through tsx take about 30 MiB more.
buildDist();
const cli = courierCli();
const baseline = await healthyLatency(false);
const isolated = await healthyLatency(true);
const memory = await memoryWithDueBacklog();
const retention = await retentionSweeps();
const peaks = memory
  .map((c) => `${c.seconds} s: ${c.peakRssMiB} MiB (${c.delivered.toLocaleString('en-US')} delivered)`)
  .join('; ');
process.stdout.write(`
| Check | Figure |
|---|---|
| Courier's CLI | ${cliWording(cli)} |
| Healthy endpoints alone | latency p50 ${baseline.p50.toFixed(1)} ms, p99 ${baseline.p99.toFixed(1)} ms (500 messages, 20 endpoints) |
| Beside a dead endpoint with 2,000 queued | latency p50 ${isolated.p50.toFixed(1)} ms, p99 ${isolated.p99.toFixed(1)} ms |
| ${DUE.toLocaleString('en-US')} deliveries due at once | worker peak RSS so far, at ${peaks} |
| Retention: ${PURGE.toLocaleString('en-US')} finished messages (1 KiB, one attempt each) behind ${RETRYING.toLocaleString('en-US')} retrying | ${Math.round(retention.purgedPerSec).toLocaleString('en-US')} messages/s deleted, ${Math.round(retention.walBytesPerMessage).toLocaleString('en-US')} B of WAL each, slowest sweep ${retention.slowestSweepMs.toFixed(0)} ms; a sweep past the retrying alone ${retention.retryingOnlySweepMs.toFixed(0)} ms; ${retention.kept.toLocaleString('en-US')} kept |
`);
process.exit(0);
