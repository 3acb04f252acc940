import { type Static, Type } from 'typebox';
import { RATE_LIMIT_MAX } from '../../setting-limits.ts';
import type { Application } from '../../store/repos/applications.ts';
import { iso, Nullable, StringMap, Text, Timestamp, Uid } from './common.ts';
import { RetryPolicyOverrides } from './policy.ts';

const rate = (description: string) =>
  Type.Optional(Nullable(Type.Integer({ minimum: 1, maximum: RATE_LIMIT_MAX, description })));

const fields = {
  uid: Type.Optional(Nullable(Uid)),
  rateLimit: rate(
    'The default rate limit (requests per second at most) of endpoints created or replaced without one. Alias: throttleRate.',
  ),
  throttleRate: rate('Svix v2 name of rateLimit.'),
  metadata: Type.Optional(Nullable(StringMap('Free-form string pairs.'))),
  retryPolicy: Type.Optional(RetryPolicyOverrides),
};
const Name = Text({ minLength: 1, maxLength: 256, description: 'Application name for humans.' });

export const ApplicationIn = Type.Object({ name: Name, ...fields }, { title: 'ApplicationIn' });
export const ApplicationPatch = Type.Object(
  { name: Type.Optional(Name), ...fields },
  { title: 'ApplicationPatch' },
);
export type ApplicationBody = Static<typeof ApplicationPatch>;

export const ApplicationOut = Type.Object(
  {
    id: Type.String({ examples: ['app_01HZX1ZQ9R6Y5W2V3T4S5R6Q7P'] }),
    uid: Nullable(Type.String()),
    name: Type.String(),
    rateLimit: Nullable(Type.Integer()),
    throttleRate: Nullable(Type.Integer()),
    metadata: StringMap('Free-form string pairs.'),
    retryPolicy: RetryPolicyOverrides,
    createdAt: Timestamp,
    updatedAt: Timestamp,
  },
  { title: 'ApplicationOut' },
);

export function applicationOut(a: Application) {
  return {
    id: a.id,
    uid: a.uid,
    name: a.name,
    rateLimit: a.rateLimit,
    throttleRate: a.rateLimit,
    metadata: a.metadata,
    retryPolicy: (a.retryPolicy ?? null) as Static<typeof RetryPolicyOverrides>,
    createdAt: iso(a.createdAt),
    updatedAt: iso(a.updatedAt),
  };
}
