import { Type } from 'typebox';
import {
  ENDPOINT_CHANNELS_MAX,
  MAX_IN_FLIGHT_MAX,
  RATE_LIMIT_MAX,
  SECRET_GRACE_DEFAULT_S,
  SECRET_GRACE_MAX_S,
} from '../../setting-limits.ts';
import type { Endpoint } from '../../store/repos/endpoints.ts';
import { TaskOut } from './background-tasks.ts';
import {
  Channel,
  EventTypeName,
  IdOrUid,
  iso,
  NO_NUL,
  Nullable,
  StringEnum,
  StringMap,
  Text,
  Timestamp,
  Uid,
} from './common.ts';
import { RetryPolicyOverrides } from './policy.ts';

export const EndpointParams = Type.Object({
  app_id: IdOrUid('The application id (app_…) or uid.'),
  endpoint_id: IdOrUid('The endpoint id (ep_…) or uid.'),
});

const eventTypes = (description: string) =>
  Type.Optional(
    Nullable(Type.Array(EventTypeName, { minItems: 1, maxItems: 1000, uniqueItems: true, description })),
  );
const perSecond = (description: string) =>
  Type.Optional(Nullable(Type.Integer({ minimum: 1, maximum: RATE_LIMIT_MAX, description })));

/** The settings PUT replaces and PATCH changes (POST adds secret and headers). */
const settings = {
  description: Type.Optional(Nullable(Text({ maxLength: 4096 }))),
  uid: Type.Optional(Nullable(Uid)),
  disabled: Type.Optional(
    Nullable(
      Type.Boolean({
        description:
          "true holds deliveries (disable); false resumes a paused endpoint (an application's token: not one the operator holds, heldByOperator).",
      }),
    ),
  ),
  filterTypes: eventTypes('Only these event types are delivered (all when absent). Alias: eventTypes.'),
  eventTypes: eventTypes('Svix v2 name of filterTypes.'),
  channels: Type.Optional(
    Nullable(
      Type.Array(Channel, {
        minItems: 1,
        maxItems: ENDPOINT_CHANNELS_MAX,
        uniqueItems: true,
        description: 'null: all channels.',
      }),
    ),
  ),
  rateLimit: perSecond(
    "Requests per second at most (default: the application's rateLimit, else COURIER_RATE_LIMIT). An application's token sets it up to that default; while the URL stays, up to what the admin token set for it instead, above the default or below (else up to the endpoint's own higher value), and never less than the endpoint has; a new URL brings a raised value down to the default. It keeps it when absent, a PUT too. Alias: throttleRate.",
  ),
  throttleRate: perSecond('Svix v2 name of rateLimit.'),
  // The column is a PostgreSQL integer.
  version: Type.Optional(Nullable(Type.Integer({ minimum: 1, maximum: 2_147_483_647 }))),
  metadata: Type.Optional(Nullable(StringMap('Free-form string pairs.'))),
  maxInFlight: Type.Optional(
    Nullable(
      Type.Integer({
        minimum: 1,
        maximum: MAX_IN_FLIGHT_MAX,
        description:
          "Courier extension: concurrent requests at most (default: COURIER_MAX_IN_FLIGHT). An application's token sets it up to that default; while the URL stays, up to what the admin token set for it instead, above the default or below (else up to the endpoint's own higher value), and never less than the endpoint has; a new URL brings a raised value down to the default. It keeps it when absent, a PUT too.",
      }),
    ),
  ),
  retryPolicy: Type.Optional(RetryPolicyOverrides),
  publicOnly: Type.Optional(
    Type.Boolean({
      description:
        "Courier extension: when true, the endpoint reaches public addresses only (COURIER_ALLOW_PRIVATE_NETWORKS does not apply). An application's token sending a new URL sets it, and cannot clear it; the admin token sets it either way, and sending a new URL without it clears it. Absent and the URL unchanged, it is kept (a PUT too).",
    }),
  ),
};

const Url = Type.String({
  minLength: 1,
  maxLength: 4096,
  pattern: NO_NUL, // WHATWG URL parsing percent-encodes a NUL, but PostgreSQL text cannot hold the one stored
  description:
    'http or https; private and loopback addresses are refused unless COURIER_ALLOW_PRIVATE_NETWORKS allows them, which it does not for a public-only endpoint (see publicOnly).',
  examples: ['https://example.com/webhook/'],
});
const Secret = Type.Optional(
  Nullable(
    Type.String({
      minLength: 1,
      maxLength: 256,
      description: 'whsec_ + standard base64 (padded) of 24-75 bytes; generated when absent.',
    }),
  ),
);
const Headers = Type.Optional(Nullable(StringMap('Extra headers sent with every delivery.')));

export const EndpointIn = Type.Object(
  { url: Url, ...settings, secret: Secret, headers: Headers },
  { title: 'EndpointIn' },
);
export const EndpointUpdate = Type.Object(
  { url: Url, ...settings, secret: Secret },
  { title: 'EndpointUpdate' },
);
export const EndpointPatch = Type.Object(
  { url: Type.Optional(Url), ...settings, secret: Secret },
  { title: 'EndpointPatch' },
);

export const EndpointOut = Type.Object(
  {
    id: Type.String({ examples: ['ep_01HZX1ZQ9R6Y5W2V3T4S5R6Q7P'] }),
    uid: Nullable(Type.String()),
    url: Type.String(),
    description: Type.String(),
    disabled: Type.Boolean({ description: 'true when disabled or paused, by its owner or by Courier.' }),
    status: StringEnum(['enabled', 'disabled', 'paused'] as const, {
      description:
        'Courier extension: paused means its owner or Courier (after a streak of permanent failures) holds its deliveries; ' +
        'disabled, its owner or Courier (after every attempt failed for COURIER_DISABLE_FAILING_AFTER).',
    }),
    disabledReason: Nullable(Type.String({ description: 'Courier extension: why it is not enabled.' })),
    heldByOperator: Type.Boolean({
      description:
        'Courier extension: paused or disabled with the admin token, so only the admin token enables it again ' +
        "(an application's token gets 403 endpoint_held_by_operator). false while it is enabled.",
    }),
    filterTypes: Nullable(Type.Array(Type.String())),
    eventTypes: Nullable(Type.Array(Type.String())),
    channels: Nullable(Type.Array(Type.String())),
    rateLimit: Type.Integer(),
    throttleRate: Type.Integer(),
    maxInFlight: Type.Integer({ description: 'Courier extension.' }),
    operatorRateLimit: Nullable(
      Type.Integer({
        description:
          "Courier extension: the rateLimit the admin token set for this URL; an application's token sets rateLimit up to it (or the endpoint's rateLimit, if higher). null: none set, the default (or the endpoint's higher value) bounds the token.",
      }),
    ),
    operatorMaxInFlight: Nullable(
      Type.Integer({
        description: 'Courier extension: the same for maxInFlight.',
      }),
    ),
    publicOnly: Type.Boolean({
      description:
        "Courier extension: the endpoint reaches public addresses only, as an application's token set its URL or the admin token set publicOnly: true.",
    }),
    retryAfterUntil: Nullable(
      Type.String({
        format: 'date-time',
        description:
          'Courier extension: the end of the last wait the receiver asked for (Retry-After on a 429 or 503). ' +
          'No delivery to this endpoint is sent before it. Cleared when the URL changes.',
      }),
    ),
    failingSince: Nullable(
      Type.String({
        format: 'date-time',
        description:
          'Courier extension: the first failure of the run of failed attempts its last attempts belong to (no success ' +
          'and no day without a failure between them); null when its last attempt succeeded, its URL changed or it was enabled again.',
      }),
    ),
    retryPolicy: RetryPolicyOverrides,
    version: Type.Integer(),
    metadata: StringMap('Free-form string pairs.'),
    createdAt: Timestamp,
    updatedAt: Timestamp,
  },
  { title: 'EndpointOut' },
);

export function endpointOut(e: Endpoint) {
  const types = e.eventTypes && e.eventTypes.length > 0 ? e.eventTypes : null;
  return {
    id: e.id,
    uid: e.uid,
    url: e.url,
    description: e.description,
    disabled: e.status !== 'enabled',
    status: e.status,
    disabledReason:
      e.status === 'enabled'
        ? null
        : (e.statusReason ?? `${e.status} by ${e.heldByOperator ? 'the operator' : 'its owner'}`),
    heldByOperator: e.heldByOperator,
    filterTypes: types,
    eventTypes: types,
    channels: e.channels && e.channels.length > 0 ? e.channels : null,
    rateLimit: e.rateLimit,
    throttleRate: e.rateLimit,
    maxInFlight: e.maxInFlight,
    operatorRateLimit: e.operatorLimits.rateLimit,
    operatorMaxInFlight: e.operatorLimits.maxInFlight,
    publicOnly: e.publicOnly,
    retryAfterUntil: e.retryAfterUntil === null ? null : iso(e.retryAfterUntil),
    failingSince: e.failingSince === null ? null : iso(e.failingSince),
    retryPolicy: (e.retryPolicy ?? null) as Record<string, never> | null,
    version: e.version,
    metadata: e.metadata,
    createdAt: iso(e.createdAt),
    updatedAt: iso(e.updatedAt),
  };
}

export const EndpointSecretOut = Type.Object({ key: Type.String() }, { title: 'EndpointSecretOut' });

export const EndpointSecretRotateIn = Nullable(
  Type.Object(
    {
      key: Secret,
      gracePeriodSeconds: Type.Optional(
        Nullable(
          Type.Integer({
            minimum: 0,
            maximum: SECRET_GRACE_MAX_S,
            description: `Courier extension: how long the previous secret keeps signing too (default ${SECRET_GRACE_DEFAULT_S / 3600} h).`,
          }),
        ),
      ),
    },
    { title: 'EndpointSecretRotateIn' },
  ),
);

export const EndpointHeadersIn = Type.Object(
  { headers: StringMap('Header name → value.') },
  { title: 'EndpointHeadersIn' },
);
export const EndpointHeadersPatchIn = Type.Object(
  {
    headers: StringMap('Headers to add or replace.'),
    deleteHeaders: Type.Optional(Nullable(Type.Array(Type.String({ maxLength: 256 }), { maxItems: 100 }))),
  },
  { title: 'EndpointHeadersPatchIn' },
);
export const EndpointHeadersOut = Type.Object(
  { headers: StringMap('Header name → value.'), sensitive: Type.Array(Type.String()) },
  { title: 'EndpointHeadersOut' },
);
/** The messages sent in [since, until): Svix's RecoverIn and ReplayIn. */
const SentRange = (title: string) =>
  Type.Object({ since: Timestamp, until: Type.Optional(Nullable(Timestamp)) }, { title });

export const RecoverIn = SentRange('RecoverIn');
export const ReplayIn = SentRange('ReplayIn');

/** The deliveries a recover or replay scheduled: a Courier extension to Svix's task answer. */
const replayed = {
  replayed: Type.Integer({
    description:
      'Courier extension: the deliveries scheduled (held while the endpoint is paused or disabled).',
  }),
};

export const RecoverOut = TaskOut('endpoint.recover', 'RecoverOut', replayed);
export const ReplayOut = TaskOut('endpoint.replay', 'ReplayOut', replayed);
export const BulkReplayOut = TaskOut('endpoint.bulk-replay', 'BulkReplayOut', replayed);
