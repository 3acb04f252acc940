/** Svix's operational webhook endpoints: the endpoint schemas cut to the fields Svix gives them. */
import { Type } from 'typebox';
import { OPERATIONAL_EVENT_TYPES } from '../../dispatch/operator-webhook.ts';
import { IdOrUid, Nullable, StringEnum } from './common.ts';
import { EndpointIn, EndpointOut, EndpointUpdate } from './endpoints.ts';

export const OperationalEndpointParams = Type.Object({
  endpoint_id: IdOrUid('The operational webhook endpoint id (ep_…) or uid.'),
});

const filterTypes = Type.Optional(
  Nullable(
    Type.Array(StringEnum(OPERATIONAL_EVENT_TYPES), {
      minItems: 1,
      uniqueItems: true,
      description: 'Only these operational events are sent (all when absent).',
    }),
  ),
);
const SETTINGS = [
  'url',
  'uid',
  'description',
  'disabled',
  'rateLimit',
  'throttleRate',
  'metadata',
  'publicOnly',
] as const;

export const OperationalWebhookEndpointIn = Type.Object(
  { ...Type.Pick(EndpointIn, [...SETTINGS, 'secret']).properties, filterTypes },
  { title: 'OperationalWebhookEndpointIn' },
);
export const OperationalWebhookEndpointUpdate = Type.Object(
  { ...Type.Pick(EndpointUpdate, SETTINGS).properties, filterTypes },
  { title: 'OperationalWebhookEndpointUpdate' },
);
/** Answered with endpointOut: the serializer writes only these fields (status and disabledReason: Courier's). */
export const OperationalWebhookEndpointOut = Type.Pick(
  EndpointOut,
  [
    'id',
    'uid',
    'url',
    'description',
    'disabled',
    'status',
    'disabledReason',
    'filterTypes',
    'rateLimit',
    'throttleRate',
    'metadata',
    'publicOnly',
    'createdAt',
    'updatedAt',
  ],
  { title: 'OperationalWebhookEndpointOut' },
);
