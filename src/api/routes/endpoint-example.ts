import { Type } from 'typebox';
import { publishToEndpoint } from '../../store/queries/publish-to-endpoint.ts';
import { findEventType, shownTo } from '../../store/repos/event-types.ts';
import { findMessage } from '../../store/repos/messages.ts';
import { flagsOf } from '../app-token-access.ts';
import { createError, fieldError, notFound } from '../errors.ts';
import { exampleFromSchema } from '../example-from-schema.ts';
import { createOnce } from '../idempotency.ts';
import { requireEndpoint } from '../lookup.ts';
import { EventTypeName } from '../schemas/common.ts';
import { EndpointParams } from '../schemas/endpoints.ts';
import { MessageOut, messageOut } from '../schemas/messages.ts';
import type { Api, ApiDeps } from '../types.ts';

/** Svix's built-in event type for testing an endpoint, and the payload Svix sends for it. */
const PING = 'svix.ping';
const PING_PAYLOAD = { success: true };

const endpointDisabled = createError('endpoint_disabled', 'The endpoint is disabled', 409);

/** Svix's answer when an event type has nothing to send. */
const noExample = createError(
  'invalid_scheme',
  'Unable to generate example message from event-type schema',
  400,
);

const EventExampleIn = Type.Object(
  {
    eventType: EventTypeName,
    exampleIndex: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: 1000,
        description: "Which of the schema's examples to send; the first by default.",
      }),
    ),
  },
  { title: 'EventExampleIn' },
);

/**
 * The example to send: the event type's schema (version "1", as Svix reads it) holds them as a
 * JSON Schema `examples` array; a schema without one gets a payload made from it. Courier
 * delivers JSON objects only, as its messages are.
 */
function exampleOf(
  name: string,
  schemas: Record<string, unknown> | null,
  made: { now: number; maxBytes: number },
  index = 0,
): Record<string, unknown> {
  const schema = schemas?.['1'];
  if (!schema || typeof schema !== 'object') {
    throw noExample(`Event type ${name} has no schema ("1") to make an example from`);
  }
  const examples = (schema as { examples?: unknown }).examples;
  let example: unknown;
  if (Array.isArray(examples) && examples.length > 0) {
    if (index >= examples.length) {
      throw fieldError(['body', 'exampleIndex'], `event type ${name} has ${examples.length} example(s)`);
    }
    example = examples[index];
  } else {
    if (index > 0) {
      throw fieldError(
        ['body', 'exampleIndex'],
        `event type ${name} has no examples: 0 sends one made from its schema`,
      );
    }
    const result = exampleFromSchema(schema, made.now, made.maxBytes);
    if ('problem' in result)
      throw noExample(`Cannot make an example of event type ${name}: ${result.problem}`);
    example = result.value;
  }
  if (example === null || typeof example !== 'object' || Array.isArray(example)) {
    throw noExample(`The example of event type ${name} is not a JSON object, which Courier sends`);
  }
  return example as Record<string, unknown>;
}

export function endpointExampleRoutes(app: Api, deps: ApiDeps): void {
  const { db, clock } = deps;

  app.post(
    '/api/v1/app/:app_id/endpoint/:endpoint_id/send-example',
    {
      schema: {
        tags: ['Endpoint'],
        summary: 'Send event type example message',
        description:
          'Sends this endpoint alone, whatever its filter, a new message of the event type with an example from ' +
          'the type\'s schema (its examples array), or {"success": true} for svix.ping, as Svix. A manual attempt, ' +
          'held while the endpoint is paused; 409 endpoint_disabled while it is disabled (Svix never sends to one). ' +
          'Tagged courier.example, a tag published messages may not carry: replay-missing does not send it to other endpoints. ' +
          'Without examples, a payload made from the schema: its const, example, default or first enum value where ' +
          'given, else a value of its type within its bounds, every property included (a string its ' +
          'pattern matches where the pattern keeps to literals, classes, groups, alternation and quantifiers; not and if ' +
          'are not honoured). 400 invalid_scheme when the event type has no schema, its example is not a JSON object, or ' +
          "none can be made. 404 for an event type missing, or one an application's token does not see (feature flags).",
        params: EndpointParams,
        body: EventExampleIn,
        response: { 200: MessageOut },
      },
    },
    async (request) => {
      const { app: application, endpoint } = await requireEndpoint(
        db,
        request.params.app_id,
        request.params.endpoint_id,
      );
      const { eventType, exampleIndex } = request.body;
      let payload: Record<string, unknown> = PING_PAYLOAD;
      if (eventType !== PING) {
        const type = await findEventType(db, eventType);
        // An event type the token may not see is not there for it: its example would show the schema.
        if (!type || !shownTo(type, flagsOf(request))) throw notFound(`Event type ${eventType} not found`);
        payload = exampleOf(
          eventType,
          type.schemas,
          { now: clock.now(), maxBytes: deps.config.maxPayloadBytes },
          exampleIndex,
        );
      }
      // As Svix, which never sends to a disabled endpoint; a paused one holds it.
      if (endpoint.status === 'disabled') {
        throw endpointDisabled(
          `Endpoint ${request.params.endpoint_id} is disabled: enable it to send it an example`,
        );
      }
      const now = clock.now();
      // Under the id its idempotency key reserved: a repeat after a lost answer gets that message.
      // By id only: findMessage also matches an eventId.
      const byId = async (id: string) => {
        const found = await findMessage(db, application.id, id);
        return found?.id === id ? found : null;
      };
      const message = await createOnce(request, 'msg', now, byId, async (id) => {
        await publishToEndpoint(
          db,
          {
            appId: application.id,
            messageId: id,
            eventType,
            payload: Buffer.from(JSON.stringify(payload)),
            now,
          },
          endpoint.id,
        );
        return (await byId(id))!;
      });
      request.publishedMessageId = message.id;
      return messageOut(message, now);
    },
  );
}
