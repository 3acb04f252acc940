import { Type } from 'typebox';
import { Nullable, StringEnum } from './common.ts';

const ms = (description: string) => Type.Integer({ minimum: 0, description });

/** Courier extension: retry-policy overrides, layered over the installation's (and the application's). */
export const RetryPolicyOverrides = Nullable(
  Type.Object(
    {
      classifier: Type.Optional(
        Type.Object(
          {
            mode: Type.Optional(StringEnum(['strict', 'lenient'] as const)),
            overrides: Type.Optional(
              Type.Unsafe<Record<string, string>>({
                type: 'object',
                propertyNames: { pattern: '^[1-5][0-9]{2}$' },
                additionalProperties: { type: 'string', enum: ['success', 'retry', 'permanent'] },
                description: 'Per-status verdicts, e.g. {"404": "permanent"}.',
              }),
            ),
          },
          { additionalProperties: false },
        ),
      ),
      backoff: Type.Optional(
        Type.Object(
          {
            kind: Type.Optional(StringEnum(['exponential', 'schedule'] as const)),
            baseMs: Type.Optional(ms('First retry delay (exponential).')),
            capMs: Type.Optional(ms('Longest delay (exponential).')),
            scheduleMs: Type.Optional(
              Type.Array(Type.Integer({ minimum: 1 }), { minItems: 1, maxItems: 100 }),
            ),
            jitter: Type.Optional(StringEnum(['equal', 'full', 'none'] as const)),
          },
          { additionalProperties: false },
        ),
      ),
      retryAfter: Type.Optional(
        Type.Object(
          {
            statuses: Type.Optional(Type.Array(Type.Integer({ minimum: 100, maximum: 599 }))),
            ceilingMs: Type.Optional(ms('Longest wait a Retry-After header may impose.')),
          },
          { additionalProperties: false },
        ),
      ),
      giveUp: Type.Optional(
        Type.Object(
          {
            maxAttempts: Type.Optional(Type.Integer({ minimum: 1 })),
            windowMs: Type.Optional(ms('How long after the first attempt retries may continue.')),
          },
          { additionalProperties: false },
        ),
      ),
    },
    {
      additionalProperties: false,
      title: 'RetryPolicyOverrides',
      description:
        'Courier extension. Overrides of the retry policy, merged field by field over the installation defaults ' +
        "(and, for an endpoint, over its application's); a backoff given here replaces the backoff wholesale. " +
        "The admin token's alone: an application's token may send an endpoint's only as it is.",
    },
  ),
);

/** Courier extension: a retry policy whole, as the layers of overrides make it. */
export const RetryPolicyOut = Type.Object(
  {
    classifier: Type.Object({
      mode: StringEnum(['strict', 'lenient'] as const),
      overrides: Type.Unsafe<Record<string, string>>({
        type: 'object',
        additionalProperties: { type: 'string' },
        description: 'Per-status verdicts, applied after the mode ({} for none).',
      }),
    }),
    backoff: Type.Object({
      kind: StringEnum(['exponential', 'schedule'] as const),
      baseMs: Type.Optional(ms('First retry delay (exponential).')),
      capMs: Type.Optional(ms('Longest delay (exponential).')),
      scheduleMs: Type.Optional(
        Type.Array(Type.Integer(), { description: 'The n-th retry waits the n-th; the last repeats.' }),
      ),
      jitter: StringEnum(['equal', 'full', 'none'] as const),
    }),
    retryAfter: Type.Object({
      statuses: Type.Array(Type.Integer(), { description: 'Statuses whose Retry-After header is honoured.' }),
      ceilingMs: ms('Longest wait a Retry-After header may impose.'),
    }),
    giveUp: Type.Object({
      maxAttempts: Type.Integer({ minimum: 1 }),
      windowMs: ms('How long after the first attempt retries may continue.'),
    }),
  },
  { title: 'RetryPolicy' },
);

/** Courier extension: the policy an endpoint follows, and the two layers of overrides that make it. */
export const EndpointRetryPolicyOut = Type.Object(
  {
    policy: RetryPolicyOut,
    application: RetryPolicyOverrides,
    endpoint: RetryPolicyOverrides,
  },
  { title: 'EndpointRetryPolicy' },
);
