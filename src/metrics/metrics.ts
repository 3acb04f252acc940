/**
 * What a Courier process tells Prometheus: its delivery attempts (by result and by what the
 * receiver answered; by endpoint, with each one's application, when COURIER_METRICS_ENDPOINTS asks), their durations, the
 * worker's own and database failures, its requests in flight and outcomes not yet written, how
 * long claimable work has waited, the API's requests, and Node's own process figures. Made only
 * when COURIER_METRICS_PORT is set.
 */
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';
import { type Clock, systemClock } from '../clock.ts';
import type { Database, Queryable } from '../store/db.ts';
import type { Completion } from '../store/queries/complete.ts';
import { endpointLabels } from '../store/queries/endpoint-labels.ts';
import {
  claimableSince,
  deadLetterCount,
  type EndpointCounts,
  endpointsByStatus,
  type QueueDepth,
  queueDepth,
} from '../store/queries/queue-figures.ts';
import { withStatementTimeout } from '../store/statement-timeout.ts';
import { EndpointAttempts } from './endpoint-attempts.ts';

/** The worker's write or claim that failed: the worker retries it, no attempt is lost. */
export type WorkerDatabaseOperation = 'claim' | 'write';

/** What the worker reports as it goes. */
export interface WorkerMetrics {
  /** An attempt whose outcome is known (before it is written), to the endpoint named. */
  attempted(completion: Completion, endpointId: string): void;
  /** The worker's own failure on a delivery: given back, no attempt counted. */
  ownFailure(): void;
  databaseError(operation: WorkerDatabaseOperation): void;
}

/** A worker's figures read at each scrape. */
export interface WorkerGauges {
  readonly inFlight: number;
  readonly unwritten: number;
  /** Claimed, but not sent soon enough after the claim: given back uncounted (send-lag.ts). */
  readonly lateReleases: number;
}

/** Receivers answer in milliseconds to tens of seconds (COURIER_REQUEST_TIMEOUT is 30 s by default). */
const ATTEMPT_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];
const REQUEST_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10];
/** Longer than a scrape should wait for the database (Prometheus' default scrape timeout is 10 s). */
const QUEUE_READ_TIMEOUT_MS = 2_000;
const QUEUE_FIGURES = ['lag', 'deliveries', 'endpoints', 'dead_letters'] as const;
type QueueFigure = (typeof QUEUE_FIGURES)[number];
/** What a scrape reads from the database: the queue's figures, and the named endpoints' labels. */
type DatabaseFigure = QueueFigure | 'endpoint_info';
const ENDPOINT_STATUSES: (keyof EndpointCounts)[] = ['enabled', 'paused', 'disabled'];
/** The `state` label of courier_queue_deliveries, and the figure it shows. */
const DEPTH_STATES: [string, keyof QueueDepth][] = [
  ['due', 'due'],
  ['scheduled', 'scheduled'],
  ['in_flight', 'inFlight'],
  ['held', 'held'],
];

/** `2xx` … `5xx` for an answer, else how the request failed (a network failure kind, or refused). */
export function attemptOutcome(attempt: Completion['attempt']): string {
  if (attempt.failureKind !== null) return attempt.failureKind;
  if (attempt.statusCode === null) return 'none';
  return `${Math.floor(attempt.statusCode / 100)}xx`;
}

export class CourierMetrics implements WorkerMetrics {
  readonly registry = new Registry();
  private worker: WorkerGauges | null = null;
  private queue: { db: Database; clock: Clock } | null = null;
  private readErrors: Counter<'figure'> | null = null;
  private readonly endpointAttempts: EndpointAttempts | null;
  private endpointsWatched = false;
  private readonly attempts = new Counter({
    name: 'courier_attempts_total',
    help: "Delivery attempts made, by the worker's decision for the delivery (delivered, retry, failed, expired; a retry for an endpoint paused meanwhile is held instead) and by the request's outcome (2xx-5xx, a network failure kind, or refused by the SSRF guard)",
    labelNames: ['result', 'outcome'] as const,
    registers: [this.registry],
  });
  private readonly attemptSeconds = new Histogram({
    name: 'courier_attempt_duration_seconds',
    help: 'Time from sending an attempt to its outcome, by result',
    labelNames: ['result'] as const,
    buckets: ATTEMPT_BUCKETS,
    registers: [this.registry],
  });
  private readonly ownFailures = new Counter({
    name: 'courier_worker_own_failures_total',
    help: "The worker's own failures on a delivery (not the receiver's): given back, no attempt counted",
    registers: [this.registry],
  });
  private readonly databaseErrors = new Counter({
    name: 'courier_worker_database_errors_total',
    help: "The worker's claims and writes of outcomes that failed (each retried): claim or write",
    labelNames: ['operation'] as const,
    registers: [this.registry],
  });
  private readonly requests = new Counter({
    name: 'courier_http_requests_total',
    help: 'API requests answered, by method, route pattern and status code',
    labelNames: ['method', 'route', 'status_code'] as const,
    registers: [this.registry],
  });
  private readonly requestSeconds = new Histogram({
    name: 'courier_http_request_duration_seconds',
    help: 'Time to answer an API request, by method and route pattern',
    labelNames: ['method', 'route'] as const,
    buckets: REQUEST_BUCKETS,
    registers: [this.registry],
  });

  /**
   * `endpointSeries` (COURIER_METRICS_ENDPOINTS): how many endpoints get attempt series of their
   * own; 0: none. `clock` tells how long a named endpoint has gone without an attempt.
   */
  constructor({ endpointSeries = 0, clock = systemClock }: { endpointSeries?: number; clock?: Clock } = {}) {
    collectDefaultMetrics({ register: this.registry });
    this.endpointAttempts =
      endpointSeries > 0 ? new EndpointAttempts(this.registry, endpointSeries, clock) : null;
    const metrics = this;
    const workerGauge = (name: string, help: string, read: (worker: WorkerGauges) => number) =>
      new Gauge({
        name,
        help,
        registers: [this.registry],
        collect() {
          if (metrics.worker) this.set(read(metrics.worker));
        },
      });
    workerGauge(
      'courier_worker_in_flight_requests',
      "Requests this process's worker has open to receivers",
      (w) => w.inFlight,
    );
    workerGauge(
      'courier_worker_unwritten_outcomes',
      'Outcomes and give-backs this worker has not yet written to the database (grows while its writes fail)',
      (w) => w.unwritten,
    );
    // The worker counts these itself: read, not counted twice.
    new Counter({
      name: 'courier_worker_late_releases_total',
      help: 'Deliveries claimed but not sent soon enough after the claim (an overloaded worker): given back, no attempt counted',
      registers: [this.registry],
      collect() {
        if (!metrics.worker) return;
        this.reset();
        this.inc(metrics.worker.lateReleases);
      },
    });
  }

  attempted(completion: Completion, endpointId: string): void {
    const result = completion.state === 'pending' ? 'retry' : completion.state;
    this.attempts.inc({ result, outcome: attemptOutcome(completion.attempt) });
    this.attemptSeconds.observe({ result }, completion.attempt.durationMs / 1000);
    this.endpointAttempts?.attempted(endpointId, result);
  }

  ownFailure(): void {
    this.ownFailures.inc();
  }

  databaseError(operation: WorkerDatabaseOperation): void {
    this.databaseErrors.inc({ operation });
  }

  /** An API request answered; `route` is its pattern (bounded), absent for a path no route has. */
  requestServed(method: string, route: string | undefined, statusCode: number, elapsedMs: number): void {
    const pattern = route ?? 'unmatched';
    this.requests.inc({ method, route: pattern, status_code: String(statusCode) });
    this.requestSeconds.observe({ method, route: pattern }, elapsedMs / 1000);
  }

  /** The worker whose requests in flight and unwritten outcomes are shown. */
  watchWorker(worker: WorkerGauges): void {
    this.worker = worker;
  }

  /**
   * The database the named endpoints' labels are read from at each scrape (courier_endpoint_info),
   * where an endpoint deleted since is found gone and its attempt series dropped. Nothing without
   * endpoint series (COURIER_METRICS_ENDPOINTS at 0); the first database given is the one read.
   */
  watchEndpoints(db: Database): void {
    const attempts = this.endpointAttempts;
    if (!attempts || this.endpointsWatched) return;
    this.endpointsWatched = true;
    this.countReadErrors(['endpoint_info']);
    const metrics = this;
    // Two scrapes may overlap (two Prometheus servers): the later read's labels are not overwritten by an earlier one's.
    let reads = 0;
    let shown = 0;
    new Gauge({
      name: 'courier_endpoint_info',
      help: "1 for each endpoint with attempt series of its own in this process (courier_endpoint_attempts_total), labelled with its uid and its application's id and uid as read at the scrape: join on job, instance and endpoint_id to sum by application. A deleted endpoint drops out, and its attempt series with it; a failed read keeps the last one's",
      labelNames: ['endpoint_id', 'endpoint_uid', 'app_id', 'app_uid'] as const,
      registers: [this.registry],
      async collect() {
        const read = ++reads;
        // The attempts' counter, registered before this gauge, has freed this scrape's idle places:
        // prom-client starts each metric's collection in that order, and the counter's is synchronous.
        const named = attempts.named();
        const found =
          named.length === 0
            ? []
            : await metrics.readFigure(db, 'endpoint_info', (q) => endpointLabels(q, named));
        if (found === undefined || read < shown) return;
        shown = read;
        this.reset();
        const there = new Set<string>();
        for (const e of found) {
          there.add(e.id);
          this.set(
            { endpoint_id: e.id, endpoint_uid: e.uid ?? '', app_id: e.appId, app_uid: e.appUid ?? '' },
            1,
          );
        }
        // Only those named before the read: one first attempted during it is not known to be gone.
        attempts.forget(named.filter((id) => !there.has(id)));
      },
    });
  }

  /**
   * The database whose queue figures (lag, deliveries by state, endpoints by status, dead letters) are read at
   * each scrape, on `clock`. Only a process that reads them shows them: a 0 from one that does not
   * would mislead.
   */
  watchQueue(db: Database, clock: Clock): void {
    const first = this.queue === null;
    this.queue = { db, clock };
    if (first) this.showQueueFigures();
  }

  private showQueueFigures(): void {
    const metrics = this;
    this.countReadErrors(QUEUE_FIGURES);
    new Gauge({
      name: 'courier_queue_lag_seconds',
      help: 'How long the longest-waiting claimable work has waited to be claimed: due, on an active endpoint below its in-flight cap and not held by its rate limit, a Retry-After or the host cap (0: none waiting; the same in every process on one database)',
      registers: [this.registry],
      async collect() {
        const lag = await metrics.readQueue('lag', async (q, now) => {
          const since = await claimableSince(q, now);
          return since === null ? 0 : Math.max(0, (now - since) / 1000);
        });
        this.set(lag ?? Number.NaN);
      },
    });
    new Gauge({
      name: 'courier_queue_deliveries',
      help: 'Deliveries not yet finished, by state: due (pending, due now), scheduled (pending, due later), in_flight, held (endpoint paused or disabled, or deleted while they were in flight); dead letters are not counted (the same in every process on one database)',
      labelNames: ['state'] as const,
      registers: [this.registry],
      async collect() {
        const depth = await metrics.readQueue('deliveries', queueDepth);
        for (const [state, key] of DEPTH_STATES) this.set({ state }, depth?.[key] ?? Number.NaN);
      },
    });
    new Gauge({
      name: 'courier_endpoints',
      help: 'Endpoints not deleted, by status: enabled, paused (by Courier after a streak of permanent failures, or by their owner), disabled (by their owner, or by Courier after failing for days) (the same in every process on one database)',
      labelNames: ['status'] as const,
      registers: [this.registry],
      async collect() {
        const counts = await metrics.readQueue('endpoints', endpointsByStatus);
        for (const status of ENDPOINT_STATUSES) this.set({ status }, counts?.[status] ?? Number.NaN);
      },
    });
    new Gauge({
      name: 'courier_dead_letters',
      help: 'Dead letters kept until retention removes them (a permanent answer, every attempt used, the time to give up run out, or the payload deleted first), replayable unless their payload is gone; those of an endpoint deleted while they were in flight included (the same in every process on one database)',
      registers: [this.registry],
      async collect() {
        this.set((await metrics.readQueue('dead_letters', deadLetterCount)) ?? Number.NaN);
      },
    });
  }

  /** The figures' read errors, each shown as 0 from the first scrape so that rate() and increase() see the first failure. */
  private countReadErrors(figures: readonly DatabaseFigure[]): void {
    this.readErrors ??= new Counter({
      name: 'courier_queue_read_errors_total',
      help: "Scrapes whose read of a figure from the database failed or took over 2 s, by figure: lag, deliveries, endpoints or dead_letters (each then shows NaN), endpoint_info (courier_endpoint_info then keeps the last read's)",
      labelNames: ['figure'] as const,
      registers: [this.registry],
    });
    for (const figure of figures) this.readErrors.inc({ figure }, 0);
  }

  /** A queue figure read at `clock`'s instant as its read begins. */
  private readQueue<T>(
    figure: QueueFigure,
    read: (q: Queryable, now: number) => Promise<T>,
  ): Promise<T | undefined> {
    const { db, clock } = this.queue!;
    return this.readFigure(db, figure, (q) => read(q, clock.now()));
  }

  /**
   * One figure read from the database, or undefined when it cannot answer in time: the rest is
   * still scraped. The statement is stopped then too, so that scrapes of a
   * slow database do not pile up on its connections.
   */
  private async readFigure<T>(
    db: Database,
    figure: DatabaseFigure,
    read: (q: Queryable) => Promise<T>,
  ): Promise<T | undefined> {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error('timed out')), QUEUE_READ_TIMEOUT_MS);
    });
    const reading = withStatementTimeout(db, QUEUE_READ_TIMEOUT_MS, read);
    reading.catch(() => {}); // its failure after the timeout is already counted
    try {
      return await Promise.race([reading, late]);
    } catch {
      this.readErrors!.inc({ figure });
      return undefined;
    } finally {
      clearTimeout(timer);
    }
  }
}
