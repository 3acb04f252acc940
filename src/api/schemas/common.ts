/**
 * Schema building blocks shared by the routes. Schemas with a `title` become named components of
 * the OpenAPI document (see openapi/document.ts); every other schema is inlined.
 */
import { type Static, type TSchema, Type } from 'typebox';
import { CHANNEL_PATTERN, EVENT_TYPE_PATTERN, TAG_PATTERN } from '../../message-limits.ts';

/** `T | null`, as a JSON Schema type list when possible (one clear validation error instead of an anyOf pair). */
export function Nullable<T extends TSchema>(schema: T) {
  const raw = { ...(schema as Record<string, unknown>) };
  if (typeof raw.type === 'string') {
    raw.type = [raw.type, 'null'];
    if (Array.isArray(raw.enum)) raw.enum = [...raw.enum, null];
    return Type.Unsafe<Static<T> | null>(raw);
  }
  return Type.Unsafe<Static<T> | null>({ anyOf: [raw, { type: 'null' }] });
}

/** Any JSON object (kept whole by the response serializer, which otherwise drops undeclared fields). */
export const AnyObject = (description?: string) =>
  Type.Unsafe<Record<string, unknown>>({
    type: 'object',
    additionalProperties: true,
    ...(description ? { description } : {}),
  });

/** A string enum with a single, readable validation error. */
export function StringEnum<const V extends readonly string[]>(
  values: V,
  options: Record<string, unknown> = {},
) {
  return Type.Unsafe<V[number]>({ type: 'string', enum: [...values], ...options });
}

// PostgreSQL text cannot hold NUL; refusing it here makes it a 422 instead of a database error.
export const NO_NUL = '^[^\\u0000]*$';

export const Text = (options: { minLength?: number; maxLength: number; description?: string }) =>
  Type.String({ pattern: NO_NUL, ...options });

export const StringMap = (description: string) =>
  Type.Unsafe<Record<string, string>>({
    type: 'object',
    additionalProperties: { type: 'string', pattern: NO_NUL, maxLength: 4096 },
    propertyNames: { pattern: NO_NUL }, // jsonb refuses \u0000 in keys too
    maxProperties: 100,
    description,
  });

/** An id (`app_…`, `ep_…`) or a uid, in a path. */
export const IdOrUid = (description: string) =>
  Type.String({ pattern: '^[a-zA-Z0-9\\-_.]{1,256}$', maxLength: 256, description });

/** A Courier id: the prefix, `_` and a ULID (Crockford base32). */
export const idPattern = (prefix: string) => `^${prefix}_[0-9A-HJKMNP-TV-Z]{26}$`;

/** A user-chosen uid: `^[a-zA-Z0-9\-_.]+$`, at most 256 characters, not starting with an id prefix. */
export const Uid = Type.String({
  format: 'uid',
  maxLength: 256,
  description:
    'Your own identifier: a-z A-Z 0-9 - _ . (at most 256), not starting with an id prefix such as app_, ' +
    'and not . or .. (which clients resolve away in a path).',
  examples: ['unique-identifier'],
});

export const EventTypeName = Type.String({
  pattern: EVENT_TYPE_PATTERN,
  maxLength: 256,
  description: 'a-z A-Z 0-9 - _ . (at most 256 characters)',
  examples: ['user.signup'],
});

/**
 * A new event type's name: not `.` or `..`, which clients resolve away in a path, nor starting
 * with `-`, which in a list iterator means "the page before". (Names made before this rule can
 * still be used.)
 */
export const NEW_EVENT_TYPE_NAME = '^(?!-)(?!\\.\\.?$)[a-zA-Z0-9\\-_.]{1,256}$';
export const NewEventTypeName = Type.String({
  pattern: NEW_EVENT_TYPE_NAME,
  maxLength: 256,
  description: 'a-z A-Z 0-9 - _ . (at most 256 characters), not starting with - and not . or ..',
  examples: ['user.signup'],
});

export const Channel = Type.String({
  pattern: CHANNEL_PATTERN,
  maxLength: 128,
  examples: ['project_1337'],
});
/** Svix's FeatureFlag: names an event type's flag, and one a token holds. */
export const FeatureFlag = Type.String({ pattern: '^[a-zA-Z0-9\\-_.]+$', maxLength: 256 });
export const FeatureFlags = (description: string) =>
  Type.Array(FeatureFlag, { maxItems: 100, uniqueItems: true, description });

export const Tag = Type.String({ pattern: TAG_PATTERN, maxLength: 128 });

export const Timestamp = Type.String({ format: 'date-time' });

/** A 204: Fastify sends no body. */
export const NoContent = Type.Unsafe<undefined>({ type: 'null', description: 'No content' });

export const Empty = Type.Object({}, { title: 'EmptyResponse' });

export const HttpError = Type.Object(
  { code: Type.String(), detail: Type.String() },
  { title: 'HttpError', description: 'Every error other than 422: a machine-readable code and a message.' },
);

export const ValidationError = Type.Object(
  {
    code: Type.Literal('validation'),
    detail: Type.Array(
      Type.Object({
        loc: Type.Array(Type.String(), {
          description: 'Where: body, query, path or header, then the field path.',
        }),
        msg: Type.String(),
        type: Type.String(),
      }),
    ),
  },
  { title: 'HTTPValidationError' },
);

/** Svix's list envelope: `iterator` is the last item's id, `prevIterator` `-` + the first's. */
export function ListResponse<T extends TSchema>(item: T, title: string) {
  return Type.Object(
    {
      data: Type.Array(item),
      iterator: Nullable(Type.String()),
      prevIterator: Nullable(Type.String()),
      done: Type.Boolean(),
    },
    { title },
  );
}

export type ListOf<T> = { data: T[]; iterator: string | null; prevIterator: string | null; done: boolean };

/** Milliseconds to the API's ISO-8601 form. */
export const iso = (ms: number): string => new Date(ms).toISOString();

/** An ISO-8601 query or body value to milliseconds (already format-checked by the schema). */
export const msOf = (value: string | null | undefined): number | undefined =>
  value === null || value === undefined ? undefined : Date.parse(value);
