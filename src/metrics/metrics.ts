/**
 * What a Courier process tells Prometheus: its delivery attempts (by result and by what the
 * receiver answered), their durations, the worker's requests in flight and outcomes not yet
 * written, how late the most overdue endpoint's work is, the API's requests, and Node's own
 * process figures. Made only when COURIER_METRICS_PORT is set: otherwise nothing is counted.
 */
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';
import type { Clock } from '../clock.ts';
import type { Database } from '../store/db.ts';
import type { Completion } from '../store/queries/complete.ts';
import { oldestDueAt } from '../store/queries/oldest-due.ts';

/** What the worker reports: each attempt once its outcome is known, and its own failures. */
export interface AttemptMetrics {
  attempted(completion: Completion): void;
  ownFailure(): void;
}

/** A worker's figures read at each scrape. */
export interface WorkerGauges {
  readonly inFlight: number;
  readonly unwritten: number;
}

/** Receivers answer in milliseconds to tens of seconds (COURIER_REQUEST_TIMEOUT is 30 s by default). */
const ATTEMPT_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];
const REQUEST_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10];

/** `2xx` … `5xx` for an answer, else how the request failed (a network failure kind, or refused). */
export function attemptOutcome(attempt: Completion['attempt']): string {
  if (attempt.failureKind !== null) return attempt.failureKind;
  if (attempt.statusCode === null) return 'none';
  return `${Math.floor(attempt.statusCode / 100)}xx`;
}

export class CourierMetrics implements AttemptMetrics {
  readonly registry = new Registry();
  private readonly attempts = new Counter({
    name: 'courier_attempts_total',
    help: 'Delivery attempts made, by what became of the delivery (delivered, retry, failed, expired) and by the outcome of the request (2xx-5xx, or a network failure kind, or refused by the SSRF guard)',
    labelNames: ['result', 'outcome'] as const,
    registers: [this.registry],
  });
  private readonly attemptSeconds = new Histogram({
    name: 'courier_attempt_duration_seconds',
    help: 'Time from sending an attempt to its outcome, by the delivery result',
    labelNames: ['result'] as const,
    buckets: ATTEMPT_BUCKETS,
    registers: [this.registry],
  });
  private readonly ownFailures = new Counter({
    name: 'courier_worker_own_failures_total',
    help: "The worker's own failures on a delivery (not the receiver's): the delivery is given back, no attempt counted",
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

  constructor() {
    collectDefaultMetrics({ register: this.registry });
  }

  attempted(completion: Completion): void {
    const result = completion.state === 'pending' ? 'retry' : completion.state;
    this.attempts.inc({ result, outcome: attemptOutcome(completion.attempt) });
    this.attemptSeconds.observe({ result }, completion.attempt.durationMs / 1000);
  }

  ownFailure(): void {
    this.ownFailures.inc();
  }

  /** An API request answered; `route` is its pattern (bounded), absent for a path no route has. */
  requestServed(method: string, route: string | undefined, statusCode: number, elapsedMs: number): void {
    const pattern = route ?? 'unmatched';
    this.requests.inc({ method, route: pattern, status_code: String(statusCode) });
    this.requestSeconds.observe({ method, route: pattern }, elapsedMs / 1000);
  }

  /** A worker's in-flight requests and unwritten outcomes, read as Prometheus scrapes. */
  watchWorker(worker: WorkerGauges): void {
    new Gauge({
      name: 'courier_worker_in_flight_requests',
      help: "Requests this process's worker has open to receivers",
      registers: [this.registry],
      collect() {
        this.set(worker.inFlight);
      },
    });
    new Gauge({
      name: 'courier_worker_unwritten_outcomes',
      help: 'Outcomes and give-backs this worker has not yet written to the database (grows while its writes fail)',
      registers: [this.registry],
      collect() {
        this.set(worker.unwritten);
      },
    });
  }

  /**
   * How late the most overdue endpoint's work is: the same for every process on one database
   * (take the max). It grows while workers fall behind, or while an endpoint is held at its
   * in-flight cap or rate limit by a slow receiver. Read from the database at each scrape.
   */
  watchQueue(db: Database, clock: Clock): void {
    new Gauge({
      name: 'courier_oldest_due_seconds',
      help: 'Seconds since the earliest next-due instant of any active endpoint with work due (0: nothing overdue; NaN: the database could not be read)',
      registers: [this.registry],
      async collect() {
        // The database unreachable: NaN, not the last figure read, and the rest still scraped.
        const at = await oldestDueAt(db).catch(() => Number.NaN);
        this.set(at === null ? 0 : Math.max(0, (clock.now() - at) / 1000));
      },
    });
  }
}
