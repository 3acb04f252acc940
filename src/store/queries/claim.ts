import { prepared, type Queryable } from '../db.ts';
import { fromEscapedBytes, toDate, toMs } from '../rows.ts';
import { ASYNC_COMMIT } from './async-commit.ts';
import { type EndpointConfig, EndpointConfigCache, type SkippedSecrets } from './endpoint-config.ts';
import type { Lease } from './unclaim.ts';

export interface ClaimedDelivery {
  id: number;
  /** The instant the claim was made for; the rate limit counted the delivery in that 100 ms slot. */
  claimedAt: number;
  /** This claim's lease_expires_at: names the lease to give back. */
  leaseUntil: number;
  messageId: string;
  endpointId: string;
  /** Attempts made before this one. */
  attempts: number;
  giveUpAt: number | null;
  /** 0 scheduled, 1 manual (resend / replay). */
  trigger: number;
  eventType: string;
  payload: Buffer;
  url: string;
  headers: Record<string, string>;
  endpointPolicy: unknown;
  appPolicy: unknown;
  /** Active signing secrets, current first. */
  secrets: string[];
  /** The endpoint's in-flight cap, across all workers. */
  maxInFlight: number;
  /** Public addresses only: COURIER_ALLOW_PRIVATE_NETWORKS does not apply. */
  publicOnly: boolean;
}

/** A claimed delivery, or (delivery_id null) the row that carries next_due_at alone. */
interface ClaimRow {
  delivery_id: number | null;
  message_id: string;
  endpoint_id: string;
  attempts: number;
  give_up_at: Date | null;
  trigger: number;
  event_type: string;
  /** encode(payload, 'escape'); null when its retention has run out. */
  payload: string | null;
  endpoint_version: number;
  app_version: number;
  next_due_at: Date | null;
}

export interface ClaimResult {
  deliveries: ClaimedDelivery[];
  /**
   * When a claim can next find work: the claim's own instant when it filled its batch (look
   * again at once), else the earliest due time of any endpoint with room, which an endpoint held
   * by another transaction makes now or earlier; null when nothing is pending anywhere.
   */
  nextDueAt: number | null;
  /**
   * Claimed, but their endpoints' secrets could not be opened: the caller gives them back (the
   * worker's own failure, not an attempt). The rest of the claim is handed over as usual.
   */
  unreadable: UnreadableDelivery[];
  /**
   * Claimed, but their payload's retention (payloadRetentionHours) ran out before a sweep expunged
   * it: not to be sent. Given back, they fail ("payload expired", courier_release).
   */
  expired: Lease[];
  /** Endpoints signed without some earlier secrets this process cannot open (see EndpointConfigCache). */
  skippedSecrets: SkippedSecrets[];
}

export interface UnreadableDelivery extends Lease {
  endpointId: string;
  error: unknown;
}

export interface ClaimInput {
  owner: string;
  now: number;
  leaseMs: number;
  limit: number;
  /** In-flight cap per receiving host; absent or 0: none. */
  hostCap?: number;
}

const sharedCache = new EndpointConfigCache();

/**
 * The payload comes as encode(payload, 'escape') rather than bytea's hex output: a JSON payload is
 * mostly ASCII, which escaping passes through as is, so it takes half the bytes of hex on the wire
 * and is copied rather than decoded (see fromEscapedBytes). Measured on 1 KiB of ASCII JSON: the
 * worker 0.5 against 1.5 µs, PostgreSQL 0.4–0.8 µs less. Text that is mostly non-ASCII pays for
 * it (each such byte takes four characters): 1 KiB of CJK text costs the worker 5.0 against
 * 1.4 µs and PostgreSQL 2–3 µs more.
 * A payload past its retention is not read out. The lateral LIMIT keeps its look-up a probe of
 * courier_payload_expiries' key per delivery, whatever that table's size (no hash join), and the
 * key alone in it keeps the planner off the (expires_at, message_id) index, which would range over
 * every expiry due but not swept yet.
 */
const CLAIM = prepared(
  'courier_claim_batch',
  `select c.delivery_id, c.message_id, c.endpoint_id, c.attempts, c.give_up_at, c.trigger, c.event_type,
          case when x.expires_at <= $2 then null else encode(c.payload, 'escape') end as payload,
          c.endpoint_version, c.app_version,
          -- Every row carries the same instant; only the first is read, so only it is parsed.
          case when row_number() over () = 1 then c.next_due_at end as next_due_at
   from ${ASYNC_COMMIT}, courier_claim_batch($1, $2, $3, $4, $5) c
   left join lateral (select pe.expires_at from courier_payload_expiries pe
                       where pe.message_id = c.message_id limit 1) x on true`,
);

/**
 * Deliveries claimed (their leases committed, their endpoints' slots taken) that could not be
 * handed over because their endpoints' configuration could not be read: the caller must release
 * them, or they would wait out their lease with their endpoints at their cap.
 */
export class UnusableClaim extends Error {
  constructor(
    readonly leases: readonly Lease[],
    cause: unknown,
  ) {
    super(`claimed ${leases.length} deliveries but could not read their endpoints' configuration`, {
      cause,
    });
    this.name = 'UnusableClaim';
  }
}

/**
 * Claims due deliveries within every endpoint's in-flight cap and rate limit
 * (courier_claim_batch), and says when to claim next. Endpoint configuration comes from a cache,
 * refreshed when its config_version changes.
 */
export async function claim(
  db: Queryable,
  input: ClaimInput,
  cache: EndpointConfigCache = sharedCache,
): Promise<ClaimResult> {
  const { rows: all } = await db.query<ClaimRow>(CLAIM, [
    input.owner,
    toDate(input.now),
    input.leaseMs,
    input.limit,
    input.hostCap ?? 0,
  ]);
  const nextDueAt = toMs(all[0]?.next_due_at ?? null);
  const rows = all.filter((r): r is ClaimRow & { delivery_id: number } => r.delivery_id !== null);
  if (rows.length === 0)
    return { deliveries: [], nextDueAt, unreadable: [], expired: [], skippedSecrets: [] };
  try {
    return { ...(await handOver(db, input, rows, cache)), nextDueAt };
  } catch (error) {
    throw new UnusableClaim(
      rows.map((r) => ({ id: r.delivery_id, leaseUntil: input.now + input.leaseMs })),
      error,
    );
  }
}

async function handOver(
  db: Queryable,
  input: ClaimInput,
  rows: readonly (ClaimRow & { delivery_id: number })[],
  cache: EndpointConfigCache,
): Promise<Omit<ClaimResult, 'nextDueAt'>> {
  const { configs, unreadable, skipped } = await cache.resolve(
    db,
    rows.map((r) => ({ endpointId: r.endpoint_id, version: `${r.endpoint_version}.${r.app_version}` })),
    input.now,
  );
  const leaseUntil = input.now + input.leaseMs;
  const result: Omit<ClaimResult, 'nextDueAt'> = {
    deliveries: [],
    unreadable: [],
    expired: [],
    skippedSecrets: skipped,
  };
  for (const r of rows) {
    if (r.payload === null) {
      result.expired.push({ id: r.delivery_id, leaseUntil });
      continue;
    }
    if (unreadable.has(r.endpoint_id)) {
      result.unreadable.push({
        id: r.delivery_id,
        leaseUntil,
        endpointId: r.endpoint_id,
        error: unreadable.get(r.endpoint_id),
      });
      continue;
    }
    const config = configs.get(r.endpoint_id) as EndpointConfig;
    result.deliveries.push({
      id: r.delivery_id,
      claimedAt: input.now,
      leaseUntil,
      messageId: r.message_id,
      endpointId: r.endpoint_id,
      attempts: r.attempts,
      giveUpAt: toMs(r.give_up_at),
      trigger: r.trigger,
      eventType: r.event_type,
      payload: fromEscapedBytes(r.payload),
      url: config.url,
      headers: config.headers,
      endpointPolicy: config.endpointPolicy,
      appPolicy: config.appPolicy,
      secrets: config.secretsAt(input.now),
      maxInFlight: config.maxInFlight,
      publicOnly: config.publicOnly,
    });
  }
  return result;
}
