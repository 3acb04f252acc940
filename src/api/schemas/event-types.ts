import { type Static, Type } from 'typebox';
import type { EventType, EventTypeFields } from '../../store/repos/event-types.ts';
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
    "Shown to an application's token only when the token holds one of these (null or an empty list: none, shown to every token), and with those it holds alone; the admin token sees every event type and flag. Sent, it replaces featureFlag.",
  ),
);
const Flag = Nullable({
  ...FeatureFlag,
  description: 'Deprecated by Svix: featureFlags [this], read when featureFlags is not sent.',
});

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

/** `flags`: an application's token's, which is shown only the flags it holds (a flag's name may name a plan or a customer). */
export function eventTypeOut(e: EventType, withContent = true, flags?: readonly string[]) {
  const featureFlags =
    flags && e.featureFlags ? e.featureFlags.filter((f) => flags.includes(f)) : e.featureFlags;
  return {
    name: e.name,
    description: e.description,
    archived: e.archived,
    deprecated: e.deprecated,
    schemas: withContent ? e.schemas : null,
    featureFlags,
    featureFlag: featureFlags?.[0] ?? null,
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
    featureFlags: pick(featureFlagsIn(body), current?.featureFlags ?? null, null),
  };
}

/** featureFlags when sent (an empty list: none), else Svix's older single featureFlag. */
function featureFlagsIn(body: EventTypeBody): string[] | null | undefined {
  const { featureFlags: flags, featureFlag: flag } = body;
  if (flags !== undefined) return flags && flags.length > 0 ? flags : null;
  return flag == null ? flag : [flag];
}
