import { Type } from 'typebox';
import type { Destination, DestinationStatus } from '../../store/repos/destinations.ts';
import { iso, Nullable } from './common.ts';
import { EndpointOut, endpointOut } from './endpoints.ts';

/** Svix's MessageStatus codes. */
export const STATUS_CODE: Record<DestinationStatus, number> = { success: 0, pending: 1, fail: 2, sending: 3 };
/** Svix's MessageStatus code back to where the message stands. */
export const STATUS_OF_CODE: readonly DestinationStatus[] = ['success', 'pending', 'fail', 'sending'];

/** Where a message stands at an endpoint, as Svix reports it. */
export const DeliveryStatusFields = {
  status: Type.Integer({
    enum: [0, 1, 2, 3],
    description:
      '0 success (delivered), 1 pending (first attempt or retry not yet due, or held while the endpoint is ' +
      'paused or disabled), 2 fail (dead-lettered), 3 sending (an attempt under way).',
  }),
  statusText: Type.String({ enum: ['success', 'pending', 'fail', 'sending'] }),
  nextAttempt: Nullable(
    Type.String({
      format: 'date-time',
      description: 'When the next attempt is due; null unless pending on an endpoint that takes deliveries.',
    }),
  ),
};

export const MessageEndpointOut = Type.Object(
  {
    ...EndpointOut.properties,
    ...DeliveryStatusFields,
    attempts: Type.Integer({
      description: 'Courier extension: attempts made so far (since the last resend or replay).',
    }),
  },
  { title: 'MessageEndpointOut' },
);

export function destinationOut(d: Destination) {
  return {
    ...endpointOut(d.endpoint),
    status: STATUS_CODE[d.status],
    statusText: d.status,
    nextAttempt: d.nextAttemptAt === null ? null : iso(d.nextAttemptAt),
    attempts: d.attempts,
  };
}
