/** Svix's operational events about an endpoint's lifecycle: one shape, whoever records them. */

import { newId } from '../ids.ts';
import type { OperationalEvent } from '../store/queries/operational-events.ts';

export const ENDPOINT_EVENT_TYPES = [
  'endpoint.created',
  'endpoint.updated',
  'endpoint.deleted',
  'endpoint.enabled',
  'endpoint.disabled',
  // Courier's: deliveries held, not dropped (through the API, or by a streak with trigger 'automatic').
  'endpoint.paused',
] as const;
export type EndpointEventType = (typeof ENDPOINT_EVENT_TYPES)[number];

/** Svix's event data (appId, appUid, endpointId, endpointUid) plus `extra` (a status change's trigger and reason). */
export function endpointEvent(
  type: EndpointEventType,
  application: { id: string; uid: string | null },
  endpoint: { id: string; uid: string | null },
  now: number,
  extra: Record<string, unknown> = {},
): OperationalEvent {
  return {
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
  };
}
