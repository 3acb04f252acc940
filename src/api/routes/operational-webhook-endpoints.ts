/**
 * Svix's operational webhook endpoints: the operator application's endpoints, which the relay of
 * every worker sends operational events to (src/dispatch/operator-webhook.ts). The application is
 * made with the first one; COURIER_OPERATOR_WEBHOOK_URL's endpoint (uid "operator") is one of them.
 */
import { Type } from 'typebox';
import { OPERATOR_APP_UID, operatorApplication } from '../../dispatch/operator-webhook.ts';
import { findApplication } from '../../store/repos/applications.ts';
import { listEndpoints } from '../../store/repos/endpoints.ts';
import { OPERATIONAL_ENDPOINT, requireOperationalEndpoint } from '../endpoint-scope.ts';
import { createEndpointOf, deleteEndpointOf, putEndpoint } from '../endpoint-writes.ts';
import { idIterator, listQuery, paginate } from '../pagination.ts';
import { ListResponse, NoContent } from '../schemas/common.ts';
import { endpointOut } from '../schemas/endpoints.ts';
import {
  OperationalWebhookEndpointIn,
  OperationalWebhookEndpointOut,
  OperationalWebhookEndpointUpdate,
  OperationalEndpointParams as params,
} from '../schemas/operational-webhook.ts';
import type { Api, ApiDeps } from '../types.ts';

const { tags } = OPERATIONAL_ENDPOINT;
const BASE = '/api/v1/operational-webhook/endpoint';

export function operationalEndpointRoutes(app: Api, deps: ApiDeps): void {
  const { db, clock } = deps;
  const application = () => db.transaction((tx) => operatorApplication(tx, clock.now()));

  app.get(
    BASE,
    {
      schema: {
        tags,
        summary: 'List operational webhook endpoints',
        querystring: Type.Object(listQuery(idIterator('ep'), 'descending')),
        response: {
          200: ListResponse(OperationalWebhookEndpointOut, 'ListResponse_OperationalWebhookEndpointOut_'),
        },
      },
    },
    async (request) => {
      const operator = await findApplication(db, OPERATOR_APP_UID);
      return paginate(
        request.query,
        'descending',
        async (w) => (operator ? listEndpoints(db, operator.id, w) : { data: [], done: true }),
        (e) => e.id,
        endpointOut,
      );
    },
  );

  app.post(
    BASE,
    {
      schema: {
        tags,
        summary: 'Create an operational webhook endpoint',
        description:
          'It receives, signed like any webhook, the operational events its filterTypes name (all when absent): ' +
          'message.attempt.exhausted, .failing and .recovered, and endpoint.created, .updated, .deleted, .enabled, ' +
          ".disabled and .paused, about every application's endpoints but the operational ones.",
        body: OperationalWebhookEndpointIn,
        response: { 201: OperationalWebhookEndpointOut },
      },
    },
    async (request, reply) => {
      const { body } = request;
      const endpoint = await createEndpointOf(deps, await application(), body, body.uid ?? null, request);
      return reply.code(201).send(endpointOut(endpoint));
    },
  );

  app.get(
    `${BASE}/:endpoint_id`,
    {
      schema: {
        tags,
        summary: 'Get an operational webhook endpoint',
        params,
        response: { 200: OperationalWebhookEndpointOut },
      },
    },
    async (request) =>
      endpointOut((await requireOperationalEndpoint(db, request.params.endpoint_id)).endpoint),
  );

  app.put(
    `${BASE}/:endpoint_id`,
    {
      schema: {
        tags,
        summary: 'Update an operational webhook endpoint (or create it with that uid)',
        description:
          'Replaces the settings; absent fields return to their defaults. Headers and secret are kept.',
        params,
        body: OperationalWebhookEndpointUpdate,
        response: { 200: OperationalWebhookEndpointOut, 201: OperationalWebhookEndpointOut },
      },
    },
    async (request, reply) => {
      const { endpoint_id } = request.params;
      const operator = (await findApplication(db, OPERATOR_APP_UID)) ?? (await application());
      const { endpoint, created } = await putEndpoint(deps, operator, endpoint_id, request.body);
      return reply.code(created ? 201 : 200).send(endpointOut(endpoint));
    },
  );

  app.delete(
    `${BASE}/:endpoint_id`,
    {
      schema: {
        tags,
        summary: 'Delete an operational webhook endpoint',
        params,
        response: { 204: NoContent },
      },
    },
    async (request, reply) => {
      const { app: operator, endpoint } = await requireOperationalEndpoint(db, request.params.endpoint_id);
      await deleteEndpointOf(deps, operator, endpoint);
      return reply.code(204).send();
    },
  );
}
