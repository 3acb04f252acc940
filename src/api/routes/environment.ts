import { Type } from 'typebox';
import { allEventTypes, writeEventTypes } from '../../store/repos/event-types.ts';
import { fieldError } from '../errors.ts';
import { AnyObject, iso, NoContent, Nullable, Timestamp } from '../schemas/common.ts';
import { EventTypeIn, EventTypeOut, eventTypeFields, eventTypeOut } from '../schemas/event-types.ts';
import type { Api, ApiDeps } from '../types.ts';

const tags = ['Environment'];
/** What one import writes at most, in one transaction. */
const MAX_EVENT_TYPES = 1000;
const FORMAT_VERSION = 1;

const EnvironmentOut = Type.Object(
  {
    createdAt: Timestamp,
    version: Type.Integer(),
    eventTypes: Type.Array(EventTypeOut),
    settings: Nullable(AnyObject('Courier keeps no environment settings: always null.')),
    connectors: Type.Array(AnyObject(), { description: 'Courier has no connectors: always empty.' }),
  },
  { title: 'EnvironmentOut' },
);

const EnvironmentIn = Type.Object(
  {
    eventTypes: Type.Optional(Nullable(Type.Array(EventTypeIn, { maxItems: MAX_EVENT_TYPES }))),
    settings: Type.Optional(Nullable(AnyObject('Taken and not kept: Courier has no environment settings.'))),
    connectors: Type.Optional(
      Nullable(Type.Array(AnyObject(), { description: 'Taken and not kept: Courier has no connectors.' })),
    ),
  },
  { title: 'EnvironmentIn' },
);

/**
 * Svix's environment export and import: the event types (what Courier keeps of an environment's
 * configuration), to copy them from one installation to another, or from Svix.
 */
export function environmentRoutes(app: Api, deps: ApiDeps): void {
  const { db, clock } = deps;

  app.post(
    '/api/v1/environment/export',
    {
      schema: {
        tags,
        summary: 'Export the environment',
        description:
          'Every event type, archived ones too, with its schemas and feature flags; for environment/import.',
        response: { 200: EnvironmentOut },
      },
    },
    async () => ({
      createdAt: iso(clock.now()),
      version: FORMAT_VERSION,
      eventTypes: (await allEventTypes(db)).map((e) => eventTypeOut(e)),
      settings: null,
      connectors: [],
    }),
  );

  app.post(
    '/api/v1/environment/import',
    {
      schema: {
        tags,
        summary: 'Import an environment',
        description:
          'Creates or updates the event types given (as POST /event-type does, an archived one restored unless ' +
          `archived is given), in one transaction; deletes nothing. At most ${MAX_EVENT_TYPES}. Settings and ` +
          'connectors, which Courier does not have, are taken and not kept.',
        body: EnvironmentIn,
        response: { 204: NoContent },
      },
    },
    async (request, reply) => {
      const types = request.body.eventTypes ?? [];
      const seen = new Set<string>();
      types.forEach((t, i) => {
        if (seen.has(t.name))
          throw fieldError(['body', 'eventTypes', String(i), 'name'], `${t.name} is given twice`);
        seen.add(t.name);
      });
      const now = clock.now();
      await db.transaction((tx) =>
        writeEventTypes(
          tx,
          types.map((t) => ({ name: t.name, fields: eventTypeFields(t, null) })),
          now,
          false,
        ),
      );
      return reply.code(204).send();
    },
  );
}
