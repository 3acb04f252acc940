/** Svix's operational events about an endpoint's lifecycle, recorded in the transaction that changes it. */

import { newId } from '../ids.ts';
import type { Queryable } from '../store/db.ts';
import { recordOperationalEvents } from '../store/queries/operational-events.ts';
import type { Application } from '../store/repos/applications.ts';
import type { Endpoint } from '../store/repos/endpoints.ts';
import type { ApiDeps } from './types.ts';

export type EndpointEventType =
  | 'endpoint.created'
  | 'endpoint.updated'
  | 'endpoint.deleted'
  | 'endpoint.enabled'
  | 'endpoint.disabled'
  // Courier's: deliveries held, not dropped (a streak's pause records it too, with trigger 'automatic').
  | 'endpoint.paused';

/**
 * Svix's event data (appId, appUid, endpointId, endpointUid) plus `extra` (a status change's
 * trigger and reason). Sent to the operator webhook when this process has one
 * (COURIER_OPERATOR_WEBHOOK_URL, as every process of an installation should).
 */
export async function recordEndpointEvent(
  tx: Queryable,
  deps: ApiDeps,
  type: EndpointEventType,
  application: Application,
  endpoint: Endpoint,
  extra: Record<string, unknown> = {},
): Promise<void> {
  const now = deps.clock.now();
  await recordOperationalEvents(
    tx,
    [
      {
        id: newId('opev', now),
        type,
        appId: application.id,
        endpointId: endpoint.id,
        data: {
          appId: application.id,
          appUid: application.uid,
          endpointId: endpoint.id,
          endpointUid: endpoint.uid,
          ...extra,
        },
        createdAt: now,
      },
    ],
    deps.config.operatorWebhookUrl !== null,
  );
}
