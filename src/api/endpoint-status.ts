/** Owner-driven status changes of an endpoint: disable/pause hold its deliveries, resume releases them. */

import type { Queryable } from '../store/db.ts';
import { heldCount, holdEndpoint, resumeEndpoint } from '../store/queries/endpoint-status.ts';
import type { Endpoint } from '../store/repos/endpoints.ts';
import type { ApiDeps } from './types.ts';

/** Released deliveries are spread over held / rate limit seconds, within [1 s, 5 min]: no thundering herd. */
export function resumeSpreadMs(held: number, rateLimit: number): number {
  return Math.min(300_000, Math.max(1_000, Math.ceil((held / rateLimit) * 1000)));
}

/** Resumes a disabled or paused endpoint; returns the deliveries released, or null if it was enabled. */
export async function resume(tx: Queryable, endpoint: Endpoint, deps: ApiDeps): Promise<number | null> {
  const held = await heldCount(tx, endpoint.id);
  const seed = Math.floor(deps.random() * 2 ** 31);
  return resumeEndpoint(tx, endpoint.id, deps.clock.now(), resumeSpreadMs(held, endpoint.rateLimit), seed);
}

/**
 * Svix's `disabled` flag: true disables an enabled endpoint (a paused one stays paused, already
 * not delivering); false resumes a disabled or paused one. null/undefined change nothing.
 */
export async function applyDisabled(
  tx: Queryable,
  endpoint: Endpoint,
  disabled: boolean | null | undefined,
  deps: ApiDeps,
): Promise<void> {
  if (disabled === true && endpoint.status === 'enabled') {
    await holdEndpoint(tx, endpoint.id, 'disabled', null, deps.clock.now());
  } else if (disabled === false && endpoint.status !== 'enabled') {
    await resume(tx, endpoint, deps);
  }
}
