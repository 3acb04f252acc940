/** Owner-driven status changes of an endpoint: disable/pause hold its deliveries, resume releases them. */

import type { Queryable } from '../store/db.ts';
import { heldCount, holdEndpoint, resumeEndpoint } from '../store/queries/endpoint-status.ts';
import type { Application } from '../store/repos/applications.ts';
import type { Endpoint } from '../store/repos/endpoints.ts';
import { recordEndpointEvent } from './endpoint-events.ts';
import type { ApiDeps } from './types.ts';

/** Released deliveries are spread over held / rate limit seconds, within [1 s, 5 min]: no thundering herd. */
export function resumeSpreadMs(held: number, rateLimit: number): number {
  return Math.min(300_000, Math.max(1_000, Math.ceil((held / rateLimit) * 1000)));
}

/**
 * Resumes a disabled or paused endpoint and records endpoint.enabled; returns the deliveries
 * released, or null if it was enabled.
 */
export async function resume(
  tx: Queryable,
  application: Application,
  endpoint: Endpoint,
  deps: ApiDeps,
): Promise<number | null> {
  const held = await heldCount(tx, endpoint.id);
  const seed = Math.floor(deps.random() * 2 ** 31);
  const spread = resumeSpreadMs(held, endpoint.rateLimit);
  const released = await resumeEndpoint(tx, endpoint.id, deps.clock.now(), spread, seed);
  if (released !== null) await recordEndpointEvent(tx, deps, 'endpoint.enabled', application, endpoint);
  return released;
}

const PAUSED_BY_OWNER = 'paused through the API';

/** Pauses an enabled endpoint (its deliveries held) and records endpoint.paused. */
export async function pause(
  tx: Queryable,
  application: Application,
  endpoint: Endpoint,
  deps: ApiDeps,
): Promise<void> {
  if (await holdEndpoint(tx, endpoint.id, 'paused', PAUSED_BY_OWNER, deps.clock.now()))
    await recordEndpointEvent(tx, deps, 'endpoint.paused', application, endpoint, {
      trigger: 'manual',
      reason: PAUSED_BY_OWNER,
    });
}

/**
 * Svix's `disabled` flag: true disables an enabled or paused endpoint (a paused one's deliveries
 * stay held; new messages are no longer stored for it) and records endpoint.disabled; false resumes
 * a disabled or paused one. null/undefined change nothing.
 */
export async function applyDisabled(
  tx: Queryable,
  application: Application,
  endpoint: Endpoint,
  disabled: boolean | null | undefined,
  deps: ApiDeps,
): Promise<void> {
  if (disabled === true) {
    if (await holdEndpoint(tx, endpoint.id, 'disabled', null, deps.clock.now()))
      await recordEndpointEvent(tx, deps, 'endpoint.disabled', application, endpoint, { trigger: 'manual' });
  } else if (disabled === false) {
    await resume(tx, application, endpoint, deps);
  }
}
