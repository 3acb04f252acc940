import { type Static, Type } from 'typebox';
import type { EventType, EventTypeFields } from '../../store/repos/event-types.ts';
import { fieldError } from '../errors.ts';
import {
  AnyObject,
  FeatureFlag,
  FeatureFlags,
  iso,
  NewEventTypeName,
  Nullable,
  Text,
  Timestamp,
} from './common.ts';

const Schemas = Nullable(
  AnyObject('JSON Schemas of the payload, by version (e.g. {"1": {…}}). Documentation only: not enforced.'),
);
const Description = Text({ maxLength: 4096 });

const Flags = Nullable(
  FeatureFlags(
    "Shown to an application's token only when the token holds one of these (null: to every token); the admin token sees every event type.",
  ),
);
const Flag = Nullable({ ...FeatureFlag, description: 'Deprecated by Svix: featureFlags [this].' });

const fields = {
  archived: Type.Optional(Nullable(Type.Boolean())),
  deprecated: Type.Optional(Nullable(Type.Boolean())),
  schemas: Type.Optional(Schemas),
  featureFlags: Type.Optional(Flags),
  featureFlag: Type.Optional(Flag),
};

export const EventTypeIn = Type.Object(
  { name: NewEventTypeName, description: Description, ...fields },
  { title: 'EventTypeIn', description: 'groupName is accepted and ignored.' },
);
export const EventTypeUpdate = Type.Object(
  { description: Description, ...fields },
  { title: 'EventTypeUpdate' },
);
export const EventTypePatch = Type.Object(
  { description: Type.Optional(Nullable(Description)), ...fields },
  { title: 'EventTypePatch' },
);
export type EventTypeBody = Static<typeof EventTypePatch>;

export const EventTypeOut = Type.Object(
  {
    name: Type.String(),
    description: Type.String(),
    archived: Type.Boolean(),
    deprecated: Type.Boolean(),
    schemas: Schemas,
    featureFlags: Flags,
    featureFlag: Nullable({ ...FeatureFlag, description: 'Deprecated by Svix: the first of featureFlags.' }),
    createdAt: Timestamp,
    updatedAt: Timestamp,
  },
  { title: 'EventTypeOut' },
);

export function eventTypeOut(e: EventType, withContent = true) {
  return {
    name: e.name,
    description: e.description,
    archived: e.archived,
    deprecated: e.deprecated,
    schemas: withContent ? e.schemas : null,
    featureFlags: e.featureFlags,
    featureFlag: e.featureFlags?.[0] ?? null,
    createdAt: iso(e.createdAt),
    updatedAt: iso(e.updatedAt),
  };
}

/** The fields a body sets: POST/PUT and imports replace (absent → default), PATCH keeps what is absent. */
export function eventTypeFields(body: EventTypeBody, current: EventType | null): EventTypeFields {
  const pick = <T>(value: T | null | undefined, kept: T, fallback: T): T =>
    value === undefined ? (current ? kept : fallback) : value === null ? fallback : value;
  return {
    description: pick(body.description, current?.description ?? '', ''),
    archived: pick(body.archived, current?.archived ?? false, false),
    deprecated: pick(body.deprecated, current?.deprecated ?? false, false),
    schemas: pick(body.schemas, current?.schemas ?? null, null),
    featureFlags: pick(flagsOf(body), current?.featureFlags ?? null, null),
  };
}

/**
 * featureFlags, or Svix's older single featureFlag; an empty list is none. Both may come together,
 * as an event type read back (or exported) shows them, when they agree.
 */
function flagsOf(body: EventTypeBody): string[] | null | undefined {
  const { featureFlags: flags, featureFlag: flag } = body;
  if (flags != null && flag != null && !flags.includes(flag))
    throw fieldError(
      ['body', 'featureFlag'],
      'featureFlag (deprecated) must be one of featureFlags when both are sent',
    );
  if (flags) return flags.length > 0 ? flags : null;
  if (flag) return [flag];
  return flags === null || flag === null ? null : undefined;
}
