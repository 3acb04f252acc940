/**
 * Svix's operational webhook endpoints: the operator application's endpoints, which the relay of
 * every worker sends operational events to (src/dispatch/operator-webhook.ts). The application is
 * made with the first one; COURIER_OPERATOR_WEBHOOK_URL's endpoint (uid "operator") is one of them.
 */
import { type Static, type TObject, Type } from 'typebox';
import { OPERATOR_APP_UID } from '../../dispatch/operator-uids.ts';
import { operatorApplication } from '../../dispatch/operator-webhook.ts';
import { isValidUid } from '../../ids.ts';
import { findApplication } from '../../store/repos/applications.ts';
import { endpointInput } from '../endpoint-input.ts';
import { endpointPage, OPERATIONAL_ENDPOINT, requireOperationalEndpoint } from '../endpoint-scope.ts';
import { createEndpointOf, deleteEndpointOf, putEndpoint } from '../endpoint-writes.ts';
import { idIterator, listQuery } from '../pagination.ts';
import { ListResponse, NoContent } from '../schemas/common.ts';
import { endpointOut } from '../schemas/endpoints.ts';
import {
  OperationalWebhookEndpointIn,
  OperationalWebhookEndpointOut,
  OperationalWebhookEndpointUpdate,
  OperationalEndpointParams as params,
} from '../schemas/operational-webhook.ts';
import type { Api, ApiDeps } from '../types.ts';

type OperationalBody = Static<typeof OperationalWebhookEndpointIn>;

/**
 * The fields Svix gives these endpoints: the validator lets others through (it ignores unknown
 * fields), and the endpoint code would take an application endpoint's (channels, eventTypes, …).
 */
function onlyFields<T extends object>(body: T, schema: TObject): T {
  return Object.fromEntries(
    Object.entries(body).filter(([name]) => Object.hasOwn(schema.properties, name)),
  ) as T;
}

const { tags } = OPERATIONAL_ENDPOINT;
const BASE = '/api/v1/operational-webhook/endpoint';

export function operationalEndpointRoutes(app: Api, deps: ApiDeps): void {
  const { db, clock, config } = deps;

  /**
   * The operator application, made for a body that passes the endpoint's checks: a refused one
   * leaves nothing behind.
   */
  async function applicationFor(body: OperationalBody) {
    const found = await findApplication(db, OPERATOR_APP_UID);
    if (found) return found;
    endpointInput(body, 'replace', null, config, { rateLimit: null, retryPolicy: null }, 'operator');
    return db.transaction((tx) => operatorApplication(tx, clock.now()));
  }

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
      return endpointPage(db, operator?.id ?? null, request.query);
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
      const body = onlyFields(request.body, OperationalWebhookEndpointIn);
      const endpoint = await createEndpointOf(
        deps,
        await applicationFor(body),
        body,
        body.uid ?? null,
        'operator',
        request,
      );
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
      const body = onlyFields(request.body, OperationalWebhookEndpointUpdate);
      // Only a uid names one a PUT can create.
      if (!isValidUid(endpoint_id)) await requireOperationalEndpoint(db, endpoint_id);
      const { endpoint, created } = await putEndpoint(
        deps,
        await applicationFor(body),
        endpoint_id,
        body,
        'operator',
      );
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
