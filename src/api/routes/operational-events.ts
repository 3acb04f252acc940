import { Type } from 'typebox';
import { listOperationalEvents, type OperationalEvent } from '../../store/queries/operational-events.ts';
import { forwardListQuery, forwardPage } from '../pagination.ts';
import { AnyObject, idPattern, iso, ListResponse, Nullable, Timestamp } from '../schemas/common.ts';
import type { Api, ApiDeps } from '../types.ts';

const OperationalEventOut = Type.Object(
  {
    id: Type.String(),
    type: Type.String({
      examples: ['endpoint.paused', 'message.attempt.exhausted', 'message.attempt.failing'],
    }),
    appId: Nullable(Type.String()),
    endpointId: Nullable(Type.String()),
    data: AnyObject(),
    createdAt: Timestamp,
  },
  { title: 'OperationalEventOut', description: 'Courier extension: something operators should know about.' },
);

const operationalEventOut = (e: OperationalEvent) => ({
  id: e.id,
  type: e.type,
  appId: e.appId,
  endpointId: e.endpointId,
  data: e.data,
  createdAt: iso(e.createdAt),
});

export function operationalEventRoutes(app: Api, deps: ApiDeps): void {
  app.get(
    '/api/v1/operational-event',
    {
      schema: {
        tags: ['Operational Event'],
        summary: 'List operational events (Courier extension)',
        description:
          "Courier extension, with the event data of Svix's operational webhooks, oldest first: " +
          'message.attempt.exhausted (a delivery dead-lettered: refused for good, or out of attempts or time), ' +
          'message.attempt.failing (its fourth failure in a row) and message.attempt.recovered (delivered after it); ' +
          'endpoint.created, .updated, .deleted, .enabled, .disabled (through the API, or with trigger automatic and ' +
          'failSince after every attempt failed for COURIER_DISABLE_FAILING_AFTER), and endpoint.paused (deliveries held: ' +
          'after a streak of permanent failures, or through the API); background_task.finished with each background task. ' +
          'Also sent to the operational webhook endpoints that take them.',
        querystring: Type.Object(forwardListQuery(idPattern('opev'))),
        response: { 200: ListResponse(OperationalEventOut, 'ListResponse_OperationalEventOut_') },
      },
    },
    async (request) => {
      const { limit = 50, iterator } = request.query;
      const rows = await listOperationalEvents(deps.db, { limit: limit + 1, after: iterator });
      return forwardPage(rows, limit, (e) => e.id, operationalEventOut);
    },
  );
}
