import type { Queryable } from '../db.ts';

/**
 * Since when the longest-waiting claimable work has waited (ms), or null when none is due: work
 * due on an active endpoint below its in-flight cap, the claim's own conditions, so an endpoint a
 * slow receiver keeps at its cap is not lag. A hold (rate limit, Retry-After, host cap) makes it
 * claimable only once over: a hold still running gives an instant after `now` (no lag). It walks
 * the claim's partial index over the endpoints due by `now` only.
 */
export async function claimableSince(q: Queryable, now: number): Promise<number | null> {
  const { rows } = await q.query<{ since: Date | null }>(
    `select min(greatest(next_due_at, coalesce(blocked_until, next_due_at))) as since
       from courier_endpoint_queues
      where active and next_due_at <= $1 and in_flight < max_in_flight`,
    [new Date(now)],
  );
  return rows[0]?.since ? rows[0].since.getTime() : null;
}

/** Deliveries not yet finished, by where they stand. */
export interface QueueDepth {
  /** Due by `now`, not claimed: work for the workers (or waiting on its endpoint's cap or hold). */
  due: number;
  /** Due later: retries waiting out their backoff, messages published with a delay. */
  scheduled: number;
  /** Claimed by a worker and not yet finished: its request under way or its outcome unwritten. */
  inFlight: number;
  /**
   * Kept while their endpoint is paused or disabled; also those an endpoint deleted while they
   * were in flight leaves behind, until retention removes them.
   */
  held: number;
}

/**
 * Counts the pending and held rows (dead letters are not counted; PostgreSQL picks the plan: a
 * scan of the whole table while the visibility map is unset, the partial indexes alone once
 * vacuumed). A claimed delivery stays 'pending' with a lease (0007): the endpoints' in-flight
 * counters, kept in the claims' and completions' transactions, say how many of the due ones are
 * claimed. One claimed at an instant after `now` (a worker's clock ahead, or a claim between
 * `now` and the read) is counted as scheduled, and one fewer as due.
 */
export async function queueDepth(q: Queryable, now: number): Promise<QueueDepth> {
  const { rows } = await q.query<QueueDepth>(
    `with pending as (
       select count(*) filter (where next_attempt_at <= $1) as due,
              count(*) filter (where next_attempt_at > $1) as scheduled
         from courier_deliveries where state = 'pending'),
     claimed as (select coalesce(sum(in_flight), 0) as n from courier_endpoint_queues)
     select greatest(p.due - c.n, 0)::float8 as due,
            (p.scheduled - greatest(c.n - p.due, 0))::float8 as scheduled,
            c.n::float8 as "inFlight",
            (select count(*) from courier_deliveries where state = 'held')::float8 as held
       from pending p, claimed c`,
    [new Date(now)],
  );
  return rows[0]!;
}

/** Endpoints not deleted, by status. */
export interface EndpointCounts {
  enabled: number;
  /** By Courier after a streak of permanent failures, or by their owner. */
  paused: number;
  /** By their owner, or by Courier after every attempt failed for days. */
  disabled: number;
}

/** A scan of the endpoints, which number in the thousands where deliveries number in millions. */
export async function endpointsByStatus(q: Queryable): Promise<EndpointCounts> {
  const { rows } = await q.query<EndpointCounts>(
    `select count(*) filter (where status = 'enabled')::float8 as enabled,
            count(*) filter (where status = 'paused')::float8 as paused,
            count(*) filter (where status = 'disabled')::float8 as disabled
       from courier_endpoints
      where deleted_at is null`,
  );
  return rows[0]!;
}

/**
 * Dead letters kept until retention removes them (replayable unless their payload is gone; those
 * of an endpoint deleted while in flight included), failed and expired alike: the dead letters'
 * partial index alone answers once vacuumed (57 ms a million here), where telling the two apart
 * reads every row (238 ms).
 */
export async function deadLetterCount(q: Queryable): Promise<number> {
  const { rows } = await q.query<{ n: number }>(
    `select count(*)::float8 as n from courier_deliveries where state in ('failed', 'expired')`,
  );
  return rows[0]!.n;
}
