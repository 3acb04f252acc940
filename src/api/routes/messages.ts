import { Type } from 'typebox';
import { newId } from '../../ids.ts';
import { EXAMPLE_TAG, EXAMPLE_TAG_RESERVED } from '../../message-limits.ts';
import { publish } from '../../store/publisher.ts';
import { anyEndpointTakes } from '../../store/queries/endpoint-filter.ts';
import { flushBarrier } from '../../store/queries/publish.ts';
import { messageStatusCounts } from '../../store/repos/message-status-counts.ts';
import { findMessage, listMessages, type MessageFilter } from '../../store/repos/messages.ts';
import { appOnDemand } from '../app-on-demand.ts';
import { conflict, databaseUnavailable, fieldChecks, fieldError, isUniqueViolation } from '../errors.ts';
import { requireApp, requireMessage } from '../lookup.ts';
import { walkMessages } from '../message-walk.ts';
import { idIterator, listQuery, paginate } from '../pagination.ts';
import { Channel, IdOrUid, iso, ListResponse, msOf, Tag } from '../schemas/common.ts';
import { STATUS_CODE, STATUS_OF_CODE } from '../schemas/destinations.ts';
import {
  MessageIn,
  MessageListItemOut,
  MessageOut,
  MessageParams,
  MessagePrecheckIn,
  MessagePrecheckOut,
  messageOut,
} from '../schemas/messages.ts';
import type { Api, ApiDeps } from '../types.ts';

const tags = ['Message'];
export const AppParams = Type.Object({ app_id: IdOrUid('The application id (app_…) or uid.') });
export const WithContent = Type.Optional(
  Type.Boolean({ default: true, description: 'false: payload is returned as {}.' }),
);

/** Query filters shared by the message and attempt lists. */
export const messageFilters = {
  before: Type.Optional(
    Type.String({ format: 'date-time', description: 'Only items created before this time.' }),
  ),
  after: Type.Optional(
    Type.String({ format: 'date-time', description: 'Only items created after this time.' }),
  ),
  channel: Type.Optional(Type.String({ ...Channel, description: 'Only messages sent to this channel.' })),
  tag: Type.Optional(Type.String({ ...Tag, description: 'Only messages with this tag.' })),
  event_types: Type.Optional(
    Type.Array(Type.String({ pattern: '^[a-zA-Z0-9\\-_.,]+$', maxLength: 10_000 }), {
      maxItems: 100,
      description: 'Event type names: repeat the parameter, or separate names with commas.',
    }),
  ),
};

/** `event_types=a,b` (as the SDKs send it) and `event_types=a&event_types=b` alike. */
export function eventTypesOf(values: readonly string[] | undefined): string[] | undefined {
  return values?.flatMap((v) => v.split(',')).filter(Boolean);
}

/** How long the payload is to be kept, when the message says (Svix's two fields; one of them). */
function payloadRetentionMs(body: {
  payloadRetentionPeriod?: number | null;
  payloadRetentionHours?: number | null;
}): number | null {
  const { payloadRetentionPeriod: days, payloadRetentionHours: hours } = body;
  if (days != null && hours != null) {
    throw fieldError(
      ['body', 'payloadRetentionHours'],
      'give payloadRetentionPeriod or payloadRetentionHours, not both',
    );
  }
  if (days != null) return days * 86_400_000;
  return hours == null ? null : hours * 3_600_000;
}

/** The message filters of a list's query, as the store takes them. */
export function messageFilterOf(q: {
  before?: string;
  after?: string;
  channel?: string;
  tag?: string;
  event_types?: string[];
}): MessageFilter {
  return {
    createdBefore: msOf(q.before),
    createdAfter: msOf(q.after),
    channel: q.channel,
    tag: q.tag,
    eventTypes: eventTypesOf(q.event_types),
  };
}

/**
 * A page of the application's list; one filtered by where messages stand walks them (bounded, as
 * walkMessages says).
 */
function listStanding(
  deps: ApiDeps,
  appId: string,
  filter: Parameters<typeof listMessages>[2],
  opts: Parameters<typeof listMessages>[3],
) {
  const { standing } = filter;
  if (!standing) return listMessages(deps.db, appId, filter, opts);
  return walkMessages(
    deps,
    `Looking for messages with status ${STATUS_CODE[standing]} (${standing}) at one of their endpoints`,
    ", or list one endpoint's messages (…/endpoint/{endpoint_id}/msg?status=)",
    (q) => listMessages(q, appId, filter, opts),
  );
}

export function messageRoutes(app: Api, deps: ApiDeps): void {
  const { db, clock } = deps;

  app.post(
    '/api/v1/app/:app_id/msg',
    {
      schema: {
        tags,
        summary: 'Send a message',
        description:
          'Stores the message and schedules one delivery per matching endpoint, atomically. Send an ' +
          'idempotency-key header to make retries safe; a duplicate eventId is refused with 409.',
        params: AppParams,
        querystring: Type.Object({ with_content: WithContent }),
        body: MessageIn,
        response: { 202: MessageOut },
      },
    },
    async (request, reply) => {
      // What Courier does not do is refused, every such field named in one answer.
      const refused = fieldChecks();
      if (request.body.deliverAt != null) {
        // Delivering now what was meant for later would be worse than refusing it.
        refused.refuse(
          ['body', 'deliverAt'],
          'scheduled delivery is not supported: Courier delivers a message as soon as it is published',
        );
      }
      const raw = (request.body as { transformationsParams?: { rawPayload?: unknown } | null })
        .transformationsParams?.rawPayload;
      if (raw != null) {
        // Sent as a JSON {} with the real bytes aside: accepted, receivers would get {}.
        refused.refuse(
          ['body', 'transformationsParams', 'rawPayload'],
          'raw (non-JSON) payloads are not supported: send the payload as a JSON object',
        );
      }
      const { eventType, payload, eventId, channels, tags: messageTags } = request.body;
      if (messageTags?.includes(EXAMPLE_TAG)) {
        refused.refuse(['body', 'tags'], EXAMPLE_TAG_RESERVED);
      }
      const keepPayloadMs = refused.check(() => payloadRetentionMs(request.body), null);
      refused.done();
      const application = await appOnDemand(deps, request.params.app_id, request.body.application, [
        'body',
        'application',
      ]);
      const now = clock.now();
      const intended = request.reservedId;
      /** The message an earlier try of this same request published (its answer lost), on disk. */
      const earlier = async () => {
        const found = intended ? await findMessage(db, application.id, intended.id) : null;
        // By id only: findMessage also matches an eventId.
        if (!found || found.id !== intended?.id) return null;
        await flushBarrier(db);
        request.publishedMessageId = found.id;
        request.earlierTryFound = true;
        return reply.code(202).send(messageOut(found, now, request.query.with_content !== false));
      };
      if (intended?.retried) {
        const answered = await earlier();
        if (answered) return answered;
      }
      request.creationAttempted = true;
      const payloadExpiresAt = keepPayloadMs === null ? null : now + keepPayloadMs;
      let result: Awaited<ReturnType<typeof publish>>;
      try {
        result = await publish(db, {
          appId: application.id,
          messageId: intended?.id ?? newId('msg', now),
          eventType,
          payload: Buffer.from(JSON.stringify(payload)),
          eventId: eventId ?? null,
          channels: channels?.length ? channels : null,
          tags: messageTags?.length ? messageTags : null,
          now,
          payloadExpiresAt,
        });
      } catch (error) {
        // Its id taken: the earlier try, still committing when this one looked, published it.
        if (!intended || !isUniqueViolation(error)) throw error;
        const answered = await earlier();
        if (answered) return answered;
        throw databaseUnavailable('The outcome of an earlier try of this request is not known yet; retry');
      }
      if (!result.created) {
        // Under this request's own id: an earlier try, committing after this one looked, has it.
        const answered = intended && result.messageId === intended.id ? await earlier() : null;
        if (answered) return answered;
        throw conflict(`A message with eventId ${eventId} already exists (${result.messageId})`);
      }
      request.publishedMessageId = result.messageId;
      return reply.code(202).send({
        id: result.messageId,
        eventId: eventId ?? null,
        eventType,
        payload: request.query.with_content === false ? {} : payload,
        channels: channels?.length ? channels : null,
        tags: messageTags?.length ? messageTags : null,
        timestamp: iso(now),
        expungedAt: null,
        payloadExpiresAt: payloadExpiresAt === null ? null : iso(payloadExpiresAt),
      });
    },
  );

  app.post(
    '/api/v1/app/:app_id/msg/precheck/active',
    {
      schema: {
        tags,
        summary: 'Precheck a message',
        description:
          'Whether a message of this event type (and channels) would be sent anywhere now: some endpoint of the ' +
          'application that is not disabled takes it (a paused one counts: it would hold it). As Svix, for a caller ' +
          'that would rather not build a payload nobody receives; a message sent anyway costs nothing either way.',
        params: AppParams,
        body: MessagePrecheckIn,
        response: { 200: MessagePrecheckOut },
      },
    },
    async (request) => {
      const application = await requireApp(db, request.params.app_id);
      const { eventType, channels } = request.body;
      return {
        active: await anyEndpointTakes(db, application.id, {
          eventType,
          channels: channels?.length ? channels : null,
        }),
      };
    },
  );

  app.get(
    '/api/v1/app/:app_id/msg',
    {
      schema: {
        tags,
        summary: 'List messages',
        description: 'Newest first unless order=ascending. before/after bound the creation time.',
        params: AppParams,
        querystring: Type.Object({
          ...listQuery(idIterator('msg'), 'descending'),
          ...messageFilters,
          with_content: WithContent,
          with_status: Type.Optional(
            Type.Boolean({
              default: false,
              description:
                'Courier extension: true adds statusCounts, where each message stands at its endpoints.',
            }),
          ),
          status: Type.Optional(
            Type.Integer({
              enum: [0, 1, 2, 3],
              description:
                'Courier extension: only messages that stand so at one of their endpoints at least (0 success, 1 pending, ' +
                "2 fail, 3 sending), as statusCounts counts. Found by walking the application's messages: a standing " +
                'few of them have takes longer to page.',
            }),
          ),
        }),
        response: { 200: ListResponse(MessageListItemOut, 'ListResponse_MessageOut_') },
      },
    },
    async (request) => {
      const application = await requireApp(db, request.params.app_id);
      const q = request.query;
      const withContent = q.with_content !== false;
      const filter = {
        ...messageFilterOf(q),
        standing: q.status === undefined ? undefined : STATUS_OF_CODE[q.status],
      };
      const now = clock.now();
      return paginate(
        q,
        'descending',
        async (w) => {
          const page = await listStanding(deps, application.id, filter, { ...w, withPayload: withContent });
          const ids = page.data.map((m) => m.id);
          const counts = q.with_status ? await messageStatusCounts(db, application.id, ids) : undefined;
          return { ...page, data: page.data.map((m) => ({ m, statusCounts: counts?.get(m.id) })) };
        },
        ({ m }) => m.id,
        ({ m, statusCounts }) => ({ ...messageOut(m, now, withContent), statusCounts }),
      );
    },
  );

  app.get(
    '/api/v1/app/:app_id/msg/:msg_id',
    {
      schema: {
        tags,
        summary: 'Get a message (by id or eventId)',
        params: MessageParams,
        querystring: Type.Object({ with_content: WithContent }),
        response: { 200: MessageOut },
      },
    },
    async (request) => {
      const application = await requireApp(db, request.params.app_id);
      const withContent = request.query.with_content !== false;
      return messageOut(
        await requireMessage(db, application, request.params.msg_id, withContent),
        clock.now(),
        withContent,
      );
    },
  );
}
