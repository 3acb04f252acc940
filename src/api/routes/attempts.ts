import { Type } from 'typebox';
import { resendDelivery } from '../../store/queries/resend.ts';
import {
  type AttemptFilter,
  expungeAttemptResponse,
  findAttempt,
  listAttempts,
} from '../../store/repos/attempts.ts';
import { listDestinations } from '../../store/repos/destinations.ts';
import { findMessages, type Message } from '../../store/repos/messages.ts';
import { notFound, payloadExpunged } from '../errors.ts';
import { requireApp, requireEndpoint, requireEndpointOf, requireMessage } from '../lookup.ts';
import { idIterator, type ListParams, listQuery, paginate } from '../pagination.ts';
import { attemptOut, MessageAttemptOut } from '../schemas/attempts.ts';
import { Empty, IdOrUid, idPattern, ListResponse, msOf, NoContent } from '../schemas/common.ts';
import { destinationOut, MessageEndpointOut } from '../schemas/destinations.ts';
import { messageOut } from '../schemas/messages.ts';
import type { Api, ApiDeps } from '../types.ts';
import { eventTypesOf, messageFilters, WithContent } from './messages.ts';

const tags = ['Message Attempt'];
const AppId = IdOrUid('The application id (app_…) or uid.');
const EndpointId = IdOrUid('The endpoint id (ep_…) or uid.');
const MsgId = IdOrUid('The message id (msg_…) or its eventId.');
const List = ListResponse(MessageAttemptOut, 'ListResponse_MessageAttemptOut_');
const AttemptParams = Type.Object({
  app_id: AppId,
  msg_id: MsgId,
  attempt_id: Type.String({ pattern: idPattern('atmpt') }),
});

const attemptQuery = {
  ...listQuery(idIterator('atmpt'), 'descending'),
  ...messageFilters,
  with_msg: Type.Optional(
    Type.Boolean({ default: false, description: 'Each attempt with its message (msg), as Svix.' }),
  ),
  with_content: WithContent,
  status: Type.Optional(
    Type.Integer({
      enum: [0, 1, 2, 3, 4],
      description: '0 success, 2 fail. Attempts are only recorded once complete, so 1, 3 and 4 match none.',
    }),
  ),
  status_code_class: Type.Optional(
    Type.Integer({
      enum: [0, 100, 200, 300, 400, 500],
      description: 'Attempts whose response status is in this class (0: no response).',
    }),
  ),
};

interface AttemptQuery extends ListParams {
  with_msg?: boolean;
  with_content?: boolean;
  status?: number;
  status_code_class?: number;
  before?: string;
  after?: string;
  channel?: string;
  tag?: string;
  event_types?: string[];
}

export function attemptRoutes(app: Api, deps: ApiDeps): void {
  const { db, clock } = deps;

  function list(query: AttemptQuery, appId: string, scope: Pick<AttemptFilter, 'endpointId' | 'messageId'>) {
    if (query.status === 1 || query.status === 3 || query.status === 4) {
      return { data: [], iterator: null, prevIterator: null, done: true };
    }
    const filter: AttemptFilter = {
      ...scope,
      delivered: query.status === undefined ? undefined : query.status === 0,
      statusCodeClass: query.status_code_class,
      startedBefore: msOf(query.before),
      startedAfter: msOf(query.after),
      channel: query.channel,
      tag: query.tag,
      eventTypes: eventTypesOf(query.event_types),
    };
    // with_msg: each attempt with its message, read for the page in one query.
    const messages = new Map<string, Message>();
    const withContent = query.with_content !== false;
    const now = clock.now();
    return paginate(
      query,
      'descending',
      async (w) => {
        const page = await listAttempts(db, filter, w);
        if (query.with_msg && page.data.length > 0) {
          const ids = [...new Set(page.data.map((a) => a.messageId))];
          for (const m of await findMessages(db, appId, ids, withContent)) messages.set(m.id, m);
        }
        return page;
      },
      (a) => a.id,
      (a) => {
        const msg = messages.get(a.messageId);
        return msg ? { ...attemptOut(a), msg: messageOut(msg, now, withContent) } : attemptOut(a);
      },
    );
  }

  app.get(
    '/api/v1/app/:app_id/attempt/endpoint/:endpoint_id',
    {
      schema: {
        tags,
        summary: 'List attempts by endpoint',
        params: Type.Object({ app_id: AppId, endpoint_id: EndpointId }),
        querystring: Type.Object(attemptQuery),
        response: { 200: List },
      },
    },
    async (request) => {
      const { app: application, endpoint } = await requireEndpoint(
        db,
        request.params.app_id,
        request.params.endpoint_id,
      );
      return list(request.query, application.id, { endpointId: endpoint.id });
    },
  );

  app.get(
    '/api/v1/app/:app_id/attempt/msg/:msg_id',
    {
      schema: {
        tags,
        summary: 'List attempts by message',
        params: Type.Object({ app_id: AppId, msg_id: MsgId }),
        querystring: Type.Object({ ...attemptQuery, endpoint_id: Type.Optional(EndpointId) }),
        response: { 200: List },
      },
    },
    async (request) => {
      const application = await requireApp(db, request.params.app_id);
      const message = await requireMessage(db, application, request.params.msg_id, false);
      const endpointId = request.query.endpoint_id
        ? (await requireEndpointOf(db, application, request.query.endpoint_id)).id
        : undefined;
      return list(request.query, application.id, { messageId: message.id, endpointId });
    },
  );

  app.get(
    '/api/v1/app/:app_id/msg/:msg_id/endpoint',
    {
      schema: {
        tags,
        summary: 'List attempted destinations',
        description:
          'The endpoints this message has been or is being sent to, each with where the message stands there: ' +
          'delivered, pending (with when the next attempt is due), sending, or failed (dead-lettered). ' +
          'Endpoints deleted since are left out.',
        params: Type.Object({ app_id: AppId, msg_id: MsgId }),
        querystring: Type.Object(listQuery(idIterator('ep'), 'ascending')),
        response: { 200: ListResponse(MessageEndpointOut, 'ListResponse_MessageEndpointOut_') },
      },
    },
    async (request) => {
      const application = await requireApp(db, request.params.app_id);
      const message = await requireMessage(db, application, request.params.msg_id, false);
      return paginate(
        request.query,
        'ascending',
        (w) => listDestinations(db, application.id, message.id, w),
        (d) => d.endpoint.id,
        destinationOut,
      );
    },
  );

  app.get(
    '/api/v1/app/:app_id/msg/:msg_id/attempt/:attempt_id',
    {
      schema: {
        tags,
        summary: 'Get an attempt',
        params: AttemptParams,
        response: { 200: MessageAttemptOut },
      },
    },
    async (request) => {
      const application = await requireApp(db, request.params.app_id);
      const message = await requireMessage(db, application, request.params.msg_id, false);
      const attempt = await findAttempt(db, message.id, request.params.attempt_id);
      if (!attempt) throw notFound(`Attempt ${request.params.attempt_id} not found`);
      return attemptOut(attempt);
    },
  );

  app.delete(
    '/api/v1/app/:app_id/msg/:msg_id/attempt/:attempt_id/content',
    {
      schema: {
        tags,
        summary: 'Delete an attempt’s response',
        description:
          'Deletes the response body and headers the attempt kept, for a receiver that answered with content ' +
          'that should not be stored. The attempt stays, its response then empty. Deleting again is a no-op.',
        params: AttemptParams,
        response: { 204: NoContent },
      },
    },
    async (request, reply) => {
      const application = await requireApp(db, request.params.app_id);
      const message = await requireMessage(db, application, request.params.msg_id, false);
      if (!(await expungeAttemptResponse(db, message.id, request.params.attempt_id))) {
        throw notFound(`Attempt ${request.params.attempt_id} not found`);
      }
      return reply.code(204).send();
    },
  );

  app.post(
    '/api/v1/app/:app_id/msg/:msg_id/endpoint/:endpoint_id/resend',
    {
      schema: {
        tags,
        summary: 'Resend a message to an endpoint',
        description:
          'Makes the delivery due now as a manual attempt, with a fresh attempt budget if it had finished ' +
          '(delivered, failed or expired). An attempt already under way is left alone. Held while the endpoint is ' +
          'paused or disabled.',
        params: Type.Object({ app_id: AppId, msg_id: MsgId, endpoint_id: EndpointId }),
        response: { 202: Empty },
      },
    },
    async (request, reply) => {
      const application = await requireApp(db, request.params.app_id);
      const message = await requireMessage(db, application, request.params.msg_id, false);
      const endpoint = await requireEndpointOf(db, application, request.params.endpoint_id);
      const outcome = await db.transaction((tx) =>
        resendDelivery(tx, { messageId: message.id, endpointId: endpoint.id, now: clock.now() }),
      );
      if (outcome === 'message_gone') throw notFound(`Message ${request.params.msg_id} not found`);
      if (outcome === 'endpoint_gone') throw notFound(`Endpoint ${request.params.endpoint_id} not found`);
      if (outcome === 'expunged') {
        throw payloadExpunged(
          `Message ${request.params.msg_id} cannot be resent: its payload was deleted or has expired`,
        );
      }
      return reply.code(202).send({});
    },
  );
}
