import { Type } from 'typebox';
import { type EndpointMessage, listEndpointMessages } from '../../store/repos/endpoint-messages.ts';
import { requireEndpoint } from '../lookup.ts';
import { walkMessages } from '../message-walk.ts';
import { idIterator, listQuery, paginate } from '../pagination.ts';
import { iso, ListResponse, Nullable } from '../schemas/common.ts';
import { DeliveryStatusFields, STATUS_CODE, STATUS_OF_CODE } from '../schemas/destinations.ts';
import { EndpointParams } from '../schemas/endpoints.ts';
import { MessageOut, messageOut } from '../schemas/messages.ts';
import type { Api, ApiDeps } from '../types.ts';
import { messageFilterOf, messageFilters, WithContent } from './messages.ts';

const EndpointMessageOut = Type.Object(
  {
    ...MessageOut.properties,
    ...DeliveryStatusFields,
    deliverAt: Nullable(
      Type.String({ format: 'date-time', description: 'Always null: Courier sends at once.' }),
    ),
  },
  { title: 'EndpointMessageOut' },
);

/** Svix's listAttemptedMessages: the messages sent, or being sent, to one endpoint. */
export function endpointMessageRoutes(app: Api, deps: ApiDeps): void {
  const { db, clock } = deps;

  app.get(
    '/api/v1/app/:app_id/endpoint/:endpoint_id/msg',
    {
      schema: {
        tags: ['Message Attempt'],
        summary: 'List the messages sent to an endpoint',
        description:
          'Newest first unless order=ascending, each with where it stands at this endpoint. before/after bound ' +
          'the creation time; status keeps one standing (0 success, 1 pending, 2 fail, 3 sending).',
        params: EndpointParams,
        querystring: Type.Object({
          ...listQuery(idIterator('msg'), 'descending'),
          ...messageFilters,
          with_content: WithContent,
          status: Type.Optional(Type.Integer({ enum: [0, 1, 2, 3] })),
        }),
        response: { 200: ListResponse(EndpointMessageOut, 'ListResponse_EndpointMessageOut_') },
      },
    },
    async (request) => {
      const { app: application, endpoint } = await requireEndpoint(
        db,
        request.params.app_id,
        request.params.endpoint_id,
      );
      const q = request.query;
      const withContent = q.with_content !== false;
      const filter = {
        ...messageFilterOf(q),
        status: q.status === undefined ? undefined : STATUS_OF_CODE[q.status],
      };
      const now = clock.now();
      return paginate(
        q,
        'descending',
        (w) =>
          walkMessages(deps, `Looking for the messages sent to endpoint ${endpoint.id}`, '', (q) =>
            listEndpointMessages(q, application.id, endpoint.id, filter, { ...w, withPayload: withContent }),
          ),
        (m) => m.message.id,
        (m: EndpointMessage) => ({
          ...messageOut(m.message, now, withContent),
          status: STATUS_CODE[m.status],
          statusText: m.status,
          nextAttempt: m.nextAttemptAt === null ? null : iso(m.nextAttemptAt),
          deliverAt: null,
        }),
      );
    },
  );
}
