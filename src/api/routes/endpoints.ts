import type { FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { isValidUid, newId } from '../../ids.ts';
import { generateSecret } from '../../signing/index.ts';
import type { Queryable, Transaction } from '../../store/db.ts';
import type { Application } from '../../store/repos/applications.ts';
import {
  createEndpoint,
  deleteEndpoint,
  type Endpoint,
  findEndpoint,
  getEndpointById,
  listEndpoints,
  lockLiveEndpoint,
  rotateSecret,
  updateEndpoint,
} from '../../store/repos/endpoints.ts';
import { recordEndpointEvent } from '../endpoint-events.ts';
import { type EndpointBody, endpointFields, normalizeSecret } from '../endpoint-input.ts';
import { applyDisabled, pause, resume } from '../endpoint-status.ts';
import { conflict, isUidTaken, notFound } from '../errors.ts';
import { createOnce } from '../idempotency.ts';
import { requireApp, requireEndpoint } from '../lookup.ts';
import { idIterator, listQuery, paginate } from '../pagination.ts';
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
  const { db, clock, config } = deps;

  async function uidFree(q: Queryable, appId: string, uid: string | null | undefined, self?: string) {
    if (!uid) return;
    const other = await findEndpoint(q, appId, uid);
    if (other && other.id !== self) throw conflict(`An endpoint with uid ${uid} already exists`);
  }

  /** By a POST (`request`: once, under its idempotency key's id) or by a PUT naming a new uid. */
  async function create(
    application: Application,
    body: EndpointBody,
    uid: string | null,
    request?: FastifyRequest,
  ): Promise<Endpoint> {
    const fields = { ...endpointFields(body, 'replace', null, config, application), uid };
    const secret = body.secret ? normalizeSecret(body.secret, ['body', 'secret']) : generateSecret();
    const now = clock.now();
    const make = async (id: string) => {
      await uidFree(db, application.id, uid);
      return db.transaction(async (tx) => {
        const disabled = !!body.disabled;
        const made = await createEndpoint(tx, { id, appId: application.id, fields, secret, disabled, now });
        await recordEndpointEvent(tx, deps, 'endpoint.created', application, made);
        return made;
      });
    };
    if (!request) return make(newId('ep', now));
    return createOnce(request, 'ep', now, (id) => findEndpoint(db, application.id, id), make);
  }

  /**
   * PUT and PATCH: settings, secret (PATCH) and the disabled flag in one transaction, computed from
   * the endpoint's row as locked, so that a concurrent edit (its headers, another PATCH) is kept.
   */
  async function update(
    application: Application,
    found: Endpoint,
    body: EndpointBody,
    mode: 'replace' | 'patch',
  ) {
    const secret = body.secret ? normalizeSecret(body.secret, ['body', 'secret']) : null;
    const disabled = mode === 'replace' ? (body.disabled ?? false) : body.disabled;
    return db.transaction(async (tx) => {
      const current = await lockLiveEndpoint(tx, found.id);
      // Deleted since it was looked up (a concurrent DELETE): a 404, as if the lookup had missed.
      if (!current) throw notFound(`Endpoint ${found.id} not found`);
      const fields = endpointFields(body, mode, current, config, application);
      await uidFree(tx, application.id, fields.uid, current.id);
      const now = clock.now();
      await updateEndpoint(tx, current.id, fields, now);
      if (secret) await rotateSecret(tx, current.id, secret, 0, now);
      const updated = (await getEndpointById(tx, current.id))!;
      await recordEndpointEvent(tx, deps, 'endpoint.updated', application, updated);
      await applyDisabled(tx, application, updated, disabled, deps);
      return (await getEndpointById(tx, current.id))!;
    });
  }

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
      const application = await requireApp(db, request.params.app_id);
      return paginate(
        request.query,
        'descending',
        (w) => listEndpoints(db, application.id, w),
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
        summary: 'Create an endpoint',
        params: AppParams,
        body: EndpointIn,
        response: { 201: EndpointOut },
      },
    },
    async (request, reply) => {
      const application = await requireApp(db, request.params.app_id);
      const endpoint = await create(application, request.body, request.body.uid ?? null, request);
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
          'Replaces the settings; absent fields return to their defaults. Headers and secret are kept.',
        params: EndpointParams,
        body: EndpointUpdate,
        response: { 200: EndpointOut, 201: EndpointOut },
      },
    },
    async (request, reply) => {
      const { app_id, endpoint_id } = request.params;
      const application = await requireApp(db, app_id);
      // Named by its uid, it keeps it: the same PUT repeated must not clear the uid and then
      // create another endpoint under it (each message would then go to both).
      const replace = async (current: Endpoint) => {
        const keepUid = request.body.uid === undefined && current.uid === endpoint_id;
        const body = keepUid ? { ...request.body, uid: endpoint_id } : request.body;
        return endpointOut(await update(application, current, body, 'replace'));
      };
      const current = await findEndpoint(db, application.id, endpoint_id);
      if (current) return replace(current);
      // Only a uid names an endpoint a PUT can create; an id that is not there is a 404.
      if (!isValidUid(endpoint_id)) throw notFound(`Endpoint ${endpoint_id} not found`);
      const uid = request.body.uid ?? endpoint_id;
      try {
        const created = await create(application, request.body, uid);
        return reply.code(201).send(endpointOut(created));
      } catch (error) {
        // A concurrent PUT of the same uid created it first: this one replaces what that one made.
        const raced = isUidTaken(error) ? await findEndpoint(db, application.id, endpoint_id) : null;
        if (raced) return replace(raced);
        throw error;
      }
    },
  );

  app.patch(
    `${BASE}/:endpoint_id`,
    {
      schema: {
        tags,
        summary: 'Partially update an endpoint',
        description:
          'Absent fields are kept; null returns a field to its default. disabled: false resumes a paused endpoint.',
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
      return endpointOut(await update(application, endpoint, request.body, 'patch'));
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
      await db.transaction(async (tx) => {
        // Deleted meanwhile by a concurrent DELETE: a 404, as if the lookup had missed.
        const current = await lockLiveEndpoint(tx, endpoint.id);
        if (!current) throw notFound(`Endpoint ${endpoint.id} not found`);
        await deleteEndpoint(tx, endpoint.id, clock.now());
        // As locked: a uid changed since the lookup is the one the event names.
        await recordEndpointEvent(tx, deps, 'endpoint.deleted', application, current);
      });
      return reply.code(204).send();
    },
  );

  /** pause and resume: a status change, answered with the endpoint as it now is. */
  const statusRoute = (
    action: string,
    summary: string,
    description: string,
    change: (tx: Transaction, application: Application, endpoint: Endpoint) => Promise<unknown>,
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
            await change(tx, application, current);
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
      '(COURIER_RETENTION). (disabled: true instead drops new messages, as in Svix.)',
    (tx, application, endpoint) => pause(tx, application, endpoint, deps),
  );
  statusRoute(
    'resume',
    'Resume an endpoint (Courier extension)',
    'Courier extension. Re-enables a paused or disabled endpoint; its held deliveries are released, spread ' +
      'over held ÷ rate-limit seconds (1 s to 5 min).',
    (tx, application, endpoint) => resume(tx, application, endpoint, deps),
  );
}
