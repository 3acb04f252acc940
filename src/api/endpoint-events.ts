/** Operational events recorded by the API, in the transaction of what they report. */

import { type EndpointEventType, endpointEvent } from '../dispatch/endpoint-events.ts';
import type { Queryable } from '../store/db.ts';
import { notifyRelays } from '../store/queries/notify-workers.ts';
import { type OperationalEvent, recordOperationalEvents } from '../store/queries/operational-events.ts';
import type { Application } from '../store/repos/applications.ts';
import type { Endpoint } from '../store/repos/endpoints.ts';
import type { ApiDeps } from './types.ts';

/** Sent to the operational webhook endpoints, if any, by the workers' relays, woken at the commit. */
export async function recordApiEvent(tx: Queryable, event: OperationalEvent): Promise<void> {
  await recordOperationalEvents(tx, [event], true);
  await notifyRelays(tx);
}

export async function recordEndpointEvent(
  tx: Queryable,
  deps: ApiDeps,
  type: EndpointEventType,
  application: Application,
  endpoint: Endpoint,
  extra: Record<string, unknown> = {},
): Promise<void> {
  const event = endpointEvent(type, application, endpoint, deps.clock.now(), extra);
  await recordApiEvent(tx, event);
}
