import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { Clock } from '../clock.ts';
import type { Logger } from '../logger.ts';
import type { WorkerMetrics } from '../metrics/metrics.ts';
import type { Random } from '../random.ts';
import type { Database } from '../store/db.ts';
import type { SenderLike } from './attempt.ts';
import type { OperatorRelay } from './operator-webhook.ts';
import type { PolicyResolver } from './policy-resolver.ts';

/**
 * A claim or completion costs the database about 0.45 ms however few rows it carries, so bigger
 * batches spend less per delivery: in sixteen paired 40,000-delivery drains, 200 / 512 took 43 µs
 * of PostgreSQL CPU per delivery against 50 µs for 100 / 256 (docs/performance-history.md, sixth
 * session). Per-endpoint caps still bound what any one receiver gets.
 */
export const DEFAULT_BATCH_SIZE = 200;
export const DEFAULT_CONCURRENCY = 512;

/** The default owner of a worker's leases: unique per process. */
export function workerOwnerId(): string {
  return `${hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`;
}

/** What a Worker is given: its ports (database, sender, clock, randomness) and its settings. */
export interface WorkerOptions {
  db: Database;
  sender: SenderLike;
  clock: Clock;
  random: Random;
  policies: PolicyResolver;
  logger?: Logger;
  /** Unique per process; leases carry it. */
  owner?: string;
  /** Deliveries claimed per round trip. */
  batchSize?: number;
  /** Requests this process keeps in flight at once (across all endpoints). */
  concurrency?: number;
  /** How long a claim stays ours; must exceed the request timeout so a live worker never loses one. */
  leaseMs?: number;
  /**
   * In-flight cap per receiving host, across its endpoints and all workers (each endpoint's own
   * cap applies too); absent or 0: none.
   */
  maxInFlightPerHost?: number;
  /** Permanent-failure streak after which an endpoint is paused. */
  pauseAfter?: number;
  /** How long every attempt to an endpoint must have failed before it is disabled; null: never (default 5 days). */
  disableFailingAfterMs?: number | null;
  /** How often this worker takes over deliveries whose lease expired. */
  reapIntervalMs?: number;
  /** How long messages are kept after their creation (retention.ts); absent or null: for ever. */
  retentionMs?: number | null;
  /** Longest idle sleep without a wake-up (a safety net under LISTEN/NOTIFY and the due timer). */
  maxIdleMs?: number;
  /** How long completions wait to share a write when no endpoint needs its slots back. */
  completionLingerMs?: number;
  /** Sends operational events to the operator webhook; absent: they are only recorded. */
  operatorRelay?: OperatorRelay;
  /** Counts attempts and the worker's own failures (COURIER_METRICS_PORT); absent: not counted. */
  metrics?: WorkerMetrics;
}
