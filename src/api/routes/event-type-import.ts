import { Type } from 'typebox';
import {
  archiveEventTypesExcept,
  type EventTypeFields,
  writeEventTypes,
} from '../../store/repos/event-types.ts';
import {
  type EventTypeFromOpenApi,
  eventTypesFromOpenApi,
  invalidSpec,
  MAX_WEBHOOKS,
  parseSpecRaw,
} from '../event-type-import.ts';
import { AnyObject, Nullable } from '../schemas/common.ts';
import type { Api, ApiDeps } from '../types.ts';

const EventTypeImportOpenApiIn = Type.Object(
  {
    spec: Type.Optional(Nullable(AnyObject('The OpenAPI document, as JSON.'))),
    specRaw: Type.Optional(
      Nullable(Type.String({ description: 'The OpenAPI document as YAML or JSON text.' })),
    ),
    dryRun: Type.Optional(
      Nullable(Type.Boolean({ description: 'true: say what would change (to_modify), change nothing.' })),
    ),
    replaceAll: Type.Optional(
      Nullable(Type.Boolean({ description: 'true: archive the event types the document does not name.' })),
    ),
  },
  { title: 'EventTypeImportOpenApiIn' },
);

const EventTypeFromOpenApiOut = Type.Object(
  {
    name: Type.String(),
    description: Type.String(),
    deprecated: Type.Boolean(),
    schemas: Nullable(AnyObject()),
    featureFlag: Nullable(
      Type.String({ description: "The first of featureFlags (Svix's older single flag)." }),
    ),
    featureFlags: Nullable(
      Type.Array(Type.String(), {
        description: 'Read from x-svix-feature-flags, else [x-svix-feature-flag]: what is kept.',
      }),
    ),
    groupName: Nullable(Type.String({ description: 'Read from x-svix-group-name; not kept.' })),
  },
  { title: 'EventTypeFromOpenApi' },
);

const EventTypeImportOpenApiOut = Type.Object(
  {
    data: Type.Object({
      modified: Type.Array(Type.String(), {
        description: 'The event types created, updated or archived (none on a dry run).',
      }),
      to_modify: Nullable(
        Type.Array(EventTypeFromOpenApiOut, {
          description:
            'The event types of the document that are new or differ from what is stored (on a dry run, what would change).',
        }),
      ),
      archived: Type.Array(Type.String(), {
        description: 'Courier extension: the event types replaceAll archived (or would, on a dry run).',
      }),
    }),
  },
  { title: 'EventTypeImportOpenApiOut' },
);

const fieldsOf = (t: EventTypeFromOpenApi): EventTypeFields => ({
  description: t.description,
  archived: false,
  deprecated: t.deprecated,
  schemas: t.schemas,
  featureFlags: t.featureFlags,
});

/** Svix's event type import from an OpenAPI document's webhooks (src/api/event-type-import.ts). */
export function eventTypeImportRoutes(app: Api, deps: ApiDeps): void {
  const { db, clock } = deps;

  app.post(
    '/api/v1/event-type/import/openapi',
    {
      schema: {
        tags: ['Event Type'],
        summary: 'Event type import from OpenAPI',
        description:
          "Creates or updates an event type for each webhook of the document (3.1's webhooks, or x-webhooks): named " +
          "by its key, described by its operation's description or summary (else its path item's), deprecated as it is, with its JSON request " +
          "body's schema as version \"1\" (local references inlined) and the body's examples as that schema's " +
          `examples, and its x-svix-feature-flags (else x-svix-feature-flag) as its featureFlags (none without them). An archived one is restored. At most ${MAX_WEBHOOKS} webhooks; one transaction: all of it, or nothing.`,
        body: EventTypeImportOpenApiIn,
        response: { 200: EventTypeImportOpenApiOut },
      },
    },
    async (request) => {
      const { spec, specRaw } = request.body;
      const dryRun = request.body.dryRun === true;
      const replaceAll = request.body.replaceAll === true;
      if ((spec == null) === (specRaw == null)) throw invalidSpec('Send exactly one of spec and specRaw');
      const imported = eventTypesFromOpenApi(spec ?? parseSpecRaw(specRaw!));
      const now = clock.now();
      return db.transaction(async (tx) => {
        const changed = new Set(
          await writeEventTypes(
            tx,
            imported.map((t) => ({ name: t.name, fields: fieldsOf(t) })),
            now,
            dryRun,
          ),
        );
        const toModify = imported.filter((t) => changed.has(t.name));
        const archived = replaceAll
          ? await archiveEventTypesExcept(
              tx,
              imported.map((t) => t.name),
              now,
              dryRun,
            )
          : [];
        const modified = dryRun ? [] : [...toModify.map((t) => t.name), ...archived];
        return { data: { modified, to_modify: toModify, archived } };
      });
    },
  );
}
