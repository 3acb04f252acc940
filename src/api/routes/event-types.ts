import type { FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import type { Queryable } from '../../store/db.ts';
import {
  createEventType,
  deleteEventType,
  type EventType,
  findEventType,
  listEventTypes,
  shownTo,
  updateEventType,
} from '../../store/repos/event-types.ts';
import { flagsOf } from '../app-token-access.ts';
import { conflict, fieldError, notFound } from '../errors.ts';
import { listQuery, paginate } from '../pagination.ts';
import { EventTypeName, ListResponse, NEW_EVENT_TYPE_NAME, NoContent } from '../schemas/common.ts';
import {
  EventTypeIn,
  EventTypeOut,
  EventTypePatch,
  EventTypeUpdate,
  eventTypeFields,
  eventTypeOut,
} from '../schemas/event-types.ts';
import type { Api, ApiDeps } from '../types.ts';

const tags = ['Event Type'];
const Params = Type.Object({ event_type_name: EventTypeName });
const NEW_NAME = new RegExp(NEW_EVENT_TYPE_NAME);
const BASE = '/api/v1/event-type';

export function eventTypeRoutes(app: Api, deps: ApiDeps): void {
  const { db, clock } = deps;

  /** Within `tx`, locked until it ends; one the request's token may not see is not found. */
  async function requireEventType(name: string, request: FastifyRequest, tx?: Queryable): Promise<EventType> {
    const found = await findEventType(tx ?? db, name, tx !== undefined);
    if (!found || !shownTo(found, flagsOf(request))) throw notFound(`Event type ${name} not found`);
    return found;
  }

  app.get(
    BASE,
    {
      schema: {
        tags,
        summary: 'List event types',
        querystring: Type.Object({
          ...listQuery('^-?[a-zA-Z0-9\\-_.]{1,256}$', 'ascending'),
          include_archived: Type.Optional(Type.Boolean({ default: false })),
          with_content: Type.Optional(
            Type.Boolean({ default: false, description: 'true: include the schemas.' }),
          ),
        }),
        response: { 200: ListResponse(EventTypeOut, 'ListResponse_EventTypeOut_') },
      },
    },
    async (request) => {
      const { include_archived, with_content } = request.query;
      return paginate(
        request.query,
        'ascending',
        (w) =>
          listEventTypes(db, { ...w, includeArchived: include_archived === true, flags: flagsOf(request) }),
        (e) => e.name,
        (e) => eventTypeOut(e, with_content === true, flagsOf(request)),
      );
    },
  );

  app.post(
    BASE,
    {
      schema: {
        tags,
        summary: 'Create an event type',
        description:
          'Creating an archived event type again un-archives and updates it. Messages never require one.',
        body: EventTypeIn,
        response: { 201: EventTypeOut },
      },
    },
    async (request, reply) => {
      const { name } = request.body;
      const fields = eventTypeFields(request.body, null);
      const created = await db.transaction(async (tx) => {
        const made = await createEventType(tx, name, fields, clock.now());
        if (made) return made;
        const existing = await findEventType(tx, name);
        if (!existing?.archived) throw conflict(`Event type ${name} already exists`);
        return (await updateEventType(tx, name, fields, clock.now()))!;
      });
      return reply.code(201).send(eventTypeOut(created));
    },
  );

  app.get(
    `${BASE}/:event_type_name`,
    { schema: { tags, summary: 'Get an event type', params: Params, response: { 200: EventTypeOut } } },
    async (request) =>
      eventTypeOut(await requireEventType(request.params.event_type_name, request), true, flagsOf(request)),
  );

  app.put(
    `${BASE}/:event_type_name`,
    {
      schema: {
        tags,
        summary: 'Update an event type (or create it)',
        params: Params,
        body: EventTypeUpdate,
        response: { 200: EventTypeOut, 201: EventTypeOut },
      },
    },
    async (request, reply) => {
      const name = request.params.event_type_name;
      const fields = eventTypeFields(request.body, null);
      const updated = await updateEventType(db, name, fields, clock.now());
      if (updated) return eventTypeOut(updated);
      if (!NEW_NAME.test(name)) {
        throw fieldError(['path', 'event_type_name'], 'a new event type may not start with - or be . or ..');
      }
      const created = await createEventType(db, name, fields, clock.now());
      // Lost a race with a concurrent create: update what it made.
      return created
        ? reply.code(201).send(eventTypeOut(created))
        : eventTypeOut((await updateEventType(db, name, fields, clock.now()))!);
    },
  );

  app.patch(
    `${BASE}/:event_type_name`,
    {
      schema: {
        tags,
        summary: 'Partially update an event type',
        params: Params,
        body: EventTypePatch,
        response: { 200: EventTypeOut },
      },
    },
    // Computed from the row as locked: a concurrent PATCH or archive is kept, not written over.
    async (request) =>
      db.transaction(async (tx) => {
        const current = await requireEventType(request.params.event_type_name, request, tx);
        const updated = await updateEventType(
          tx,
          current.name,
          eventTypeFields(request.body, current),
          clock.now(),
        );
        if (!updated) throw notFound(`Event type ${current.name} not found`);
        return eventTypeOut(updated);
      }),
  );

  app.delete(
    `${BASE}/:event_type_name`,
    {
      schema: {
        tags,
        summary: 'Archive an event type',
        description:
          'Archives it, as Svix does (it stays readable and can be restored); expunge=true deletes it.',
        params: Params,
        querystring: Type.Object({ expunge: Type.Optional(Type.Boolean({ default: false })) }),
        response: { 204: NoContent },
      },
    },
    async (request, reply) => {
      if (request.query.expunge) {
        if (!(await deleteEventType(db, request.params.event_type_name))) {
          throw notFound(`Event type ${request.params.event_type_name} not found`);
        }
      } else {
        await db.transaction(async (tx) => {
          const current = await requireEventType(request.params.event_type_name, request, tx);
          await updateEventType(tx, current.name, { ...current, archived: true }, clock.now());
        });
      }
      return reply.code(204).send();
    },
  );
}
