import { Type } from 'typebox';
import type { Transaction } from '../../store/db.ts';
import type { Application } from '../../store/repos/applications.ts';
import { type Endpoint, getEndpointById, lockLiveEndpoint } from '../../store/repos/endpoints.ts';
import { type Writer, writerOf } from '../endpoint-input.ts';
import { endpointPage } from '../endpoint-scope.ts';
import { pause, resume } from '../endpoint-status.ts';
import { createEndpointOf, deleteEndpointOf, putEndpoint, updateEndpointOf } from '../endpoint-writes.ts';
import { notFound } from '../errors.ts';
import { requireApp, requireEndpoint } from '../lookup.ts';
import { idIterator, listQuery } from '../pagination.ts';
import { IdOrUid, ListResponse, NoContent } from '../schemas/common.ts';
import {
  EndpointIn,
  EndpointOut,
  EndpointParams,
  EndpointPatch,
  EndpointUpdate,
  endpointOut,
} from '../schemas/endpoints.ts';
import type { Api, ApiDeps } from '../types.ts';

const tags = ['Endpoint'];
const AppParams = Type.Object({ app_id: IdOrUid('The application id (app_…) or uid.') });
const BASE = '/api/v1/app/:app_id/endpoint';

export function endpointRoutes(app: Api, deps: ApiDeps): void {
  const { db } = deps;

  app.get(
    BASE,
    {
      schema: {
        tags,
        summary: 'List endpoints',
        params: AppParams,
        querystring: Type.Object(listQuery(idIterator('ep'), 'descending')),
        response: { 200: ListResponse(EndpointOut, 'ListResponse_EndpointOut_') },
      },
    },
    async (request) => {
      return endpointPage(db, (await requireApp(db, request.params.app_id)).id, request.query);
    },
  );

  app.post(
    BASE,
    {
      schema: {
        tags,
        summary: 'Create an endpoint',
        params: AppParams,
        body: EndpointIn,
        response: { 201: EndpointOut },
      },
    },
    async (request, reply) => {
      const application = await requireApp(db, request.params.app_id);
      const endpoint = await createEndpointOf(
        deps,
        application,
        request.body,
        request.body.uid ?? null,
        writerOf(request),
        request,
      );
      return reply.code(201).send(endpointOut(endpoint));
    },
  );

  app.get(
    `${BASE}/:endpoint_id`,
    { schema: { tags, summary: 'Get an endpoint', params: EndpointParams, response: { 200: EndpointOut } } },
    async (request) => {
      const { endpoint } = await requireEndpoint(db, request.params.app_id, request.params.endpoint_id);
      return endpointOut(endpoint);
    },
  );

  app.put(
    `${BASE}/:endpoint_id`,
    {
      schema: {
        tags,
        summary: 'Update an endpoint (or create it with that uid)',
        description:
          "Replaces the settings; absent fields return to their defaults, except that an application's token keeps " +
          "maxInFlight, rateLimit and retryPolicy (the operator's; a new URL brings raised values down to the defaults). " +
          'Headers and secret are kept.',
        params: EndpointParams,
        body: EndpointUpdate,
        response: { 200: EndpointOut, 201: EndpointOut },
      },
    },
    async (request, reply) => {
      const application = await requireApp(db, request.params.app_id);
      const { endpoint, created } = await putEndpoint(
        deps,
        application,
        request.params.endpoint_id,
        request.body,
        writerOf(request),
      );
      return reply.code(created ? 201 : 200).send(endpointOut(endpoint));
    },
  );

  app.patch(
    `${BASE}/:endpoint_id`,
    {
      schema: {
        tags,
        summary: 'Partially update an endpoint',
        description:
          "Absent fields are kept; null returns a field to its default (an application's token may not change retryPolicy, null included). disabled: false resumes a paused endpoint (an application's token: unless the operator holds it, heldByOperator).",
        params: EndpointParams,
        body: EndpointPatch,
        response: { 200: EndpointOut },
      },
    },
    async (request) => {
      const { app: application, endpoint } = await requireEndpoint(
        db,
        request.params.app_id,
        request.params.endpoint_id,
      );
      return endpointOut(
        await updateEndpointOf(deps, application, endpoint, request.body, 'patch', writerOf(request)),
      );
    },
  );

  app.delete(
    `${BASE}/:endpoint_id`,
    { schema: { tags, summary: 'Delete an endpoint', params: EndpointParams, response: { 204: NoContent } } },
    async (request, reply) => {
      const { app: application, endpoint } = await requireEndpoint(
        db,
        request.params.app_id,
        request.params.endpoint_id,
      );
      await deleteEndpointOf(deps, application, endpoint);
      return reply.code(204).send();
    },
  );

  /** pause and resume: a status change, answered with the endpoint as it now is. */
  const statusRoute = (
    action: string,
    summary: string,
    description: string,
    change: (
      tx: Transaction,
      application: Application,
      endpoint: Endpoint,
      writer: Writer,
    ) => Promise<unknown>,
  ) =>
    app.post(
      `${BASE}/:endpoint_id/${action}`,
      { schema: { tags, summary, description, params: EndpointParams, response: { 200: EndpointOut } } },
      async (request) => {
        const { app: application, endpoint } = await requireEndpoint(
          db,
          request.params.app_id,
          request.params.endpoint_id,
        );
        return endpointOut(
          await db.transaction(async (tx) => {
            // Deleted meanwhile by a concurrent DELETE: a 404, as if the lookup had missed.
            const current = await lockLiveEndpoint(tx, endpoint.id);
            if (!current) throw notFound(`Endpoint ${endpoint.id} not found`);
            await change(tx, application, current, writerOf(request));
            return (await getEndpointById(tx, endpoint.id))!;
          }),
        );
      },
    );

  statusRoute(
    'pause',
    'Pause an endpoint (Courier extension)',
    'Courier extension. Stops deliveries without losing any: pending and newly published messages are held ' +
      'until the endpoint is resumed, or until their messages are older than the retention period ' +
      '(COURIER_RETENTION). (disabled: true instead drops new messages, as in Svix.) With the admin token the hold ' +
      "is the operator's (heldByOperator), an endpoint already held included (recorded as endpoint.updated): only the admin token then resumes it.",
    (tx, application, endpoint, writer) => pause(tx, application, endpoint, deps, writer),
  );
  statusRoute(
    'resume',
    'Resume an endpoint (Courier extension)',
    'Courier extension. Re-enables a paused or disabled endpoint; its held deliveries are released, spread ' +
      "over held ÷ rate-limit seconds (1 s to 5 min). An application's token may not resume one the operator holds " +
      '(heldByOperator): 403 endpoint_held_by_operator.',
    (tx, application, endpoint, writer) => resume(tx, application, endpoint, deps, writer),
  );
}
