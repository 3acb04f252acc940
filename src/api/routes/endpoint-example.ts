import { Type } from 'typebox';
import { newId } from '../../ids.ts';
import { publishToEndpoint } from '../../store/queries/publish-to-endpoint.ts';
import { findEventType } from '../../store/repos/event-types.ts';
import { createError, fieldError, notFound } from '../errors.ts';
import { requireEndpoint } from '../lookup.ts';
import { EventTypeName } from '../schemas/common.ts';
import { EndpointParams } from '../schemas/endpoints.ts';
import { MessageOut, messageOut } from '../schemas/messages.ts';
import type { Api, ApiDeps } from '../types.ts';

/** Svix's built-in event type for testing an endpoint, and the payload Svix sends for it. */
const PING = 'svix.ping';
const PING_PAYLOAD = { success: true };

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
 * JSON Schema `examples` array. Courier delivers JSON objects only, as its messages are.
 */
function exampleOf(
  name: string,
  schemas: Record<string, unknown> | null,
  index = 0,
): Record<string, unknown> {
  const schema = schemas?.['1'];
  const examples =
    schema && typeof schema === 'object' ? (schema as { examples?: unknown }).examples : undefined;
  if (!Array.isArray(examples) || examples.length === 0) {
    throw noExample(`Event type ${name} has no example to send: give its schema ("1") an examples array`);
  }
  if (index >= examples.length) {
    throw fieldError(['body', 'exampleIndex'], `event type ${name} has ${examples.length} example(s)`);
  }
  const example = examples[index];
  if (example === null || typeof example !== 'object' || Array.isArray(example)) {
    throw noExample(`Example ${index} of event type ${name} is not a JSON object, which Courier sends`);
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
          'held while the endpoint is paused or disabled. 400 invalid_scheme when the event type has no example.',
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
        if (!type) throw notFound(`Event type ${eventType} not found`);
        payload = exampleOf(eventType, type.schemas, exampleIndex);
      }
      const now = clock.now();
      const message = {
        appId: application.id,
        messageId: newId('msg', now),
        eventType,
        payload: Buffer.from(JSON.stringify(payload)),
        now,
      };
      await publishToEndpoint(db, message, endpoint.id);
      return messageOut({
        id: message.messageId,
        appId: application.id,
        eventId: null,
        eventType,
        payload: message.payload,
        channels: null,
        tags: null,
        createdAt: now,
        expungedAt: null,
      });
    },
  );
}
