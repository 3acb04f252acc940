/** Endpoint lifecycle events recorded by the API, in the transaction that changes the endpoint. */

import { type EndpointEventType, endpointEvent } from '../dispatch/endpoint-events.ts';
import type { Queryable } from '../store/db.ts';
import { recordOperationalEvents } from '../store/queries/operational-events.ts';
import type { Application } from '../store/repos/applications.ts';
import type { Endpoint } from '../store/repos/endpoints.ts';
import type { ApiDeps } from './types.ts';

/** Sent to the operational webhook endpoints, if any, by a worker's relay. */
export async function recordEndpointEvent(
  tx: Queryable,
  deps: ApiDeps,
  type: EndpointEventType,
  application: Application,
  endpoint: Endpoint,
  extra: Record<string, unknown> = {},
): Promise<void> {
  const event = endpointEvent(type, application, endpoint, deps.clock.now(), extra);
  await recordOperationalEvents(tx, [event], true);
}
