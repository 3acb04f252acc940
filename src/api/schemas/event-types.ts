import { type Static, Type } from 'typebox';
import type { EventType, EventTypeFields } from '../../store/repos/event-types.ts';
import { AnyObject, iso, NewEventTypeName, Nullable, Text, Timestamp } from './common.ts';

const Schemas = Nullable(
  AnyObject('JSON Schemas of the payload, by version (e.g. {"1": {…}}). Documentation only: not enforced.'),
);
const Description = Text({ maxLength: 4096 });

const fields = {
  archived: Type.Optional(Nullable(Type.Boolean())),
  deprecated: Type.Optional(Nullable(Type.Boolean())),
  schemas: Type.Optional(Schemas),
};

export const EventTypeIn = Type.Object(
  { name: NewEventTypeName, description: Description, ...fields },
  { title: 'EventTypeIn', description: 'featureFlag and groupName are accepted and ignored.' },
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
  };
}
