/** Owner-driven status changes of an endpoint: disable/pause hold its deliveries, resume releases them. */

import type { Queryable } from '../store/db.ts';
import { heldCount, holdEndpoint, resumeEndpoint, takeOverHold } from '../store/queries/endpoint-status.ts';
import type { Application } from '../store/repos/applications.ts';
import type { Endpoint } from '../store/repos/endpoints.ts';
import { recordEndpointEvent } from './endpoint-events.ts';
import type { Writer } from './endpoint-input.ts';
import { createError } from './errors.ts';
import type { ApiDeps } from './types.ts';

/** Released deliveries are spread over held / rate limit seconds, within [1 s, 5 min]: no thundering herd. */
export function resumeSpreadMs(held: number, rateLimit: number): number {
  return Math.min(300_000, Math.max(1_000, Math.ceil((held / rateLimit) * 1000)));
}

const heldByOperatorError = createError('endpoint_held_by_operator', 'The operator holds this endpoint', 403);

/**
 * Resumes a disabled or paused endpoint and records endpoint.enabled; returns the deliveries
 * released, or null if it was enabled. `endpoint` is as locked: a hold the operator made is
 * theirs to end, so an application's token is refused it.
 */
export async function resume(
  tx: Queryable,
  application: Application,
  endpoint: Endpoint,
  deps: ApiDeps,
  writer: Writer,
): Promise<number | null> {
  if (endpoint.heldByOperator && writer !== 'operator')
    throw heldByOperatorError(
      `Endpoint ${endpoint.id} is ${endpoint.status}, held by the operator: only the admin token enables it again. ` +
        "An application's token changes its other settings with disabled: true in a PUT, or without disabled in a PATCH.",
    );
  const held = await heldCount(tx, endpoint.id);
  const seed = Math.floor(deps.random() * 2 ** 31);
  const spread = resumeSpreadMs(held, endpoint.rateLimit);
  const released = await resumeEndpoint(tx, endpoint.id, deps.clock.now(), spread, seed);
  if (released !== null) await recordEndpointEvent(tx, deps, 'endpoint.enabled', application, endpoint);
  return released;
}

const PAUSED_BY_OWNER = 'paused through the API';

/**
 * Pauses an enabled endpoint (its deliveries held) and records endpoint.paused. The operator's
 * pause of an endpoint already held makes the hold theirs, recorded as endpoint.updated (its status
 * stays, heldByOperator changes), so that what follows the operational events reads it anew.
 */
export async function pause(
  tx: Queryable,
  application: Application,
  endpoint: Endpoint,
  deps: ApiDeps,
  writer: Writer,
): Promise<void> {
  const byOperator = writer === 'operator';
  if (await holdEndpoint(tx, endpoint.id, 'paused', PAUSED_BY_OWNER, deps.clock.now(), byOperator))
    await recordEndpointEvent(tx, deps, 'endpoint.paused', application, endpoint, {
      trigger: 'manual',
      reason: PAUSED_BY_OWNER,
    });
  else if (byOperator && (await takeOverHold(tx, endpoint.id, deps.clock.now())))
    await recordEndpointEvent(tx, deps, 'endpoint.updated', application, endpoint);
}

/**
 * Svix's `disabled` flag: true disables an enabled or paused endpoint (a paused one's deliveries
 * stay held; new messages are no longer stored for it) and records endpoint.disabled; false resumes
 * a disabled or paused one. null/undefined change nothing. The operator's true makes a hold theirs,
 * as their pause does; a token's true leaves the operator's hold as they made it (a PUT sends it to
 * change the rest), a pause not made a disable.
 */
export async function applyDisabled(
  tx: Queryable,
  application: Application,
  endpoint: Endpoint,
  disabled: boolean | null | undefined,
  deps: ApiDeps,
  writer: Writer,
): Promise<void> {
  if (disabled === true) {
    const byOperator = writer === 'operator';
    if (endpoint.heldByOperator && !byOperator) return;
    if (await holdEndpoint(tx, endpoint.id, 'disabled', null, deps.clock.now(), byOperator))
      await recordEndpointEvent(tx, deps, 'endpoint.disabled', application, endpoint, { trigger: 'manual' });
    // The write's own endpoint.updated (endpoint-writes.ts), in the same transaction, tells of it.
    else if (byOperator) await takeOverHold(tx, endpoint.id, deps.clock.now());
  } else if (disabled === false) {
    await resume(tx, application, endpoint, deps, writer);
  }
}
