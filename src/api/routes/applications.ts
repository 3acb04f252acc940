import type { FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import type { Config } from '../../config.ts';
import { OPERATOR_APP_UID } from '../../dispatch/operator-uids.ts';
import { isValidUid, newId } from '../../ids.ts';
import type { Queryable } from '../../store/db.ts';
import {
  type Application,
  type ApplicationFields,
  createApplication,
  deleteApplication,
  findApplication,
  listApplications,
  lockLiveApplication,
  updateApplication,
} from '../../store/repos/applications.ts';
import { checkPolicy } from '../endpoint-input.ts';
import { conflict, fieldError, isUidTaken, notFound } from '../errors.ts';
import { createOnce } from '../idempotency.ts';
import { requireApp } from '../lookup.ts';
import { idIterator, listQuery, paginate } from '../pagination.ts';
import {
  type ApplicationBody,
  ApplicationIn,
  ApplicationOut,
  ApplicationPatch,
  applicationOut,
} from '../schemas/applications.ts';
import { IdOrUid, ListResponse, NoContent } from '../schemas/common.ts';
import type { Api, ApiDeps } from '../types.ts';

const tags = ['Application'];
const Params = Type.Object({ app_id: IdOrUid('The application id (app_…) or uid.') });

/** Svix SDK filters of the application list that Courier does not implement. */
const UNSUPPORTED_FILTERS = {
  exclude_apps_with_no_endpoints: Type.Optional(
    Type.Boolean({ description: 'Not supported: true is a 422.' }),
  ),
  exclude_apps_with_disabled_endpoints: Type.Optional(
    Type.Boolean({ description: 'Not supported: true is a 422.' }),
  ),
  exclude_apps_with_svix_play_endpoints: Type.Optional(
    Type.Boolean({ description: 'Not supported: true is a 422.' }),
  ),
};

/**
 * An application's fields from a request body: POST/PUT replace (absent → default), PATCH keeps what
 * is absent; null is the default either way. loc names the body in validation errors.
 */
export function applicationFields(
  config: Config,
  body: ApplicationBody,
  current: Application | null,
  patch: boolean,
  loc: string[] = ['body'],
): ApplicationFields {
  const pick = <T>(value: T | null | undefined, kept: T, fallback: T): T =>
    value === undefined ? (patch ? kept : fallback) : value === null ? fallback : value;
  if (body.retryPolicy) checkPolicy(config, [body.retryPolicy], [...loc, 'retryPolicy']);
  const rate = body.rateLimit !== undefined ? body.rateLimit : body.throttleRate;
  return {
    name: body.name ?? current!.name,
    uid: pick(body.uid, current?.uid ?? null, null),
    rateLimit: pick(rate, current?.rateLimit ?? null, null),
    retryPolicy: pick<unknown>(body.retryPolicy, current?.retryPolicy ?? null, null),
    metadata: pick(body.metadata, current?.metadata ?? {}, {}),
  };
}

export function applicationRoutes(app: Api, deps: ApiDeps): void {
  const { db, clock, config } = deps;

  const fieldsOf = (body: ApplicationBody, current: Application | null, patch: boolean) =>
    applicationFields(config, body, current, patch);

  /**
   * The operator events' application is found by its uid (operator-webhook.ts): another application
   * under it would be adopted, and a new uid would orphan it, so neither is accepted.
   */
  async function uidFree(
    q: Queryable,
    uid: string | null | undefined,
    current: Application | null,
    loc = ['body', 'uid'],
  ): Promise<void> {
    const operator = current?.uid === OPERATOR_APP_UID;
    if (operator !== (uid === OPERATOR_APP_UID)) {
      throw fieldError(
        loc,
        operator
          ? `the operator application keeps its uid ${OPERATOR_APP_UID}`
          : `the uid ${OPERATOR_APP_UID} is reserved for Courier's operator application`,
      );
    }
    if (!uid) return;
    const other = await findApplication(q, uid);
    if (other && other.id !== current?.id) throw conflict(`An application with uid ${uid} already exists`);
  }

  /** PUT and PATCH: the fields computed from the row as locked, so a concurrent edit is kept. */
  async function save(found: Application, body: ApplicationBody, patch: boolean) {
    return db.transaction(async (tx) => {
      const current = await lockLiveApplication(tx, found.id);
      // Deleted since it was looked up (a concurrent DELETE): a 404, as if the lookup had missed.
      if (!current) throw notFound(`Application ${found.id} not found`);
      const fields = fieldsOf(body, current, patch);
      await uidFree(tx, fields.uid, current);
      return applicationOut(await updateApplication(tx, current.id, fields, clock.now()));
    });
  }

  /** By a POST (`request`: once, under its idempotency key's id) or by a PUT naming a new uid. */
  async function create(fields: ApplicationFields, request?: FastifyRequest, uidLoc?: string[]) {
    const now = clock.now();
    const make = async (id: string) => {
      await uidFree(db, fields.uid, null, uidLoc);
      return createApplication(db, id, fields, now);
    };
    const find = (id: string) => findApplication(db, id);
    return applicationOut(
      await (request ? createOnce(request, 'app', now, find, make) : make(newId('app', now))),
    );
  }

  app.get(
    '/api/v1/app',
    {
      schema: {
        tags,
        summary: 'List applications',
        querystring: Type.Object({ ...listQuery(idIterator('app'), 'ascending'), ...UNSUPPORTED_FILTERS }),
        response: { 200: ListResponse(ApplicationOut, 'ListResponse_ApplicationOut_') },
      },
    },
    async (request) => {
      const query = request.query as Record<string, unknown>;
      const asked = Object.keys(UNSUPPORTED_FILTERS).find((name) => query[name] === true);
      // An unfiltered list where a filtered one was asked for would mislead: refuse instead.
      if (asked) throw fieldError(['query', asked], 'this filter is not supported; leave it out or false');
      return paginate(
        request.query,
        'ascending',
        (w) => listApplications(db, w),
        (a) => a.id,
        applicationOut,
      );
    },
  );

  app.post(
    '/api/v1/app',
    {
      schema: {
        tags,
        summary: 'Create an application',
        description:
          'With get_if_exists=true, an existing application with the same uid is returned (200) instead of a 409.',
        querystring: Type.Object({ get_if_exists: Type.Optional(Type.Boolean({ default: false })) }),
        body: ApplicationIn,
        response: { 200: ApplicationOut, 201: ApplicationOut },
      },
    },
    async (request, reply) => {
      const { uid } = request.body;
      const existing = async () => (uid && request.query.get_if_exists ? findApplication(db, uid) : null);
      const found = await existing();
      if (found) return reply.code(200).send(applicationOut(found));
      try {
        return reply.code(201).send(await create(fieldsOf(request.body, null, false), request));
      } catch (error) {
        // Created concurrently under the same uid (committed before our uid check, or caught by the
        // unique index after it): with get_if_exists that one is the answer.
        const raced = isUidTaken(error) ? await existing() : null;
        if (raced) return reply.code(200).send(applicationOut(raced));
        throw error;
      }
    },
  );

  app.get(
    '/api/v1/app/:app_id',
    { schema: { tags, summary: 'Get an application', params: Params, response: { 200: ApplicationOut } } },
    async (request) => applicationOut(await requireApp(db, request.params.app_id)),
  );

  app.put(
    '/api/v1/app/:app_id',
    {
      schema: {
        tags,
        summary: 'Update an application (or create it with that uid)',
        params: Params,
        body: ApplicationIn,
        response: { 200: ApplicationOut, 201: ApplicationOut },
      },
    },
    async (request, reply) => {
      const { app_id } = request.params;
      // Named by its uid, it keeps it: the same PUT repeated must not clear the uid and then
      // create another application under it.
      const replace = (current: Application) => {
        const keepUid = request.body.uid === undefined && current.uid === app_id;
        return save(current, keepUid ? { ...request.body, uid: app_id } : request.body, false);
      };
      const current = await findApplication(db, app_id);
      if (current) return replace(current);
      // Only a uid names an application a PUT can create; an id that is not there is a 404.
      if (!isValidUid(app_id)) throw notFound(`Application ${app_id} not found`);
      const fields = fieldsOf(request.body, null, false);
      const uidLoc = fields.uid ? undefined : ['path', 'app_id'];
      fields.uid ??= app_id;
      try {
        const created = await create(fields, undefined, uidLoc);
        return reply.code(201).send(created);
      } catch (error) {
        // A concurrent PUT of the same uid created it first: this one replaces what that one made.
        const raced = isUidTaken(error) ? await findApplication(db, app_id) : null;
        if (raced) return replace(raced);
        throw error;
      }
    },
  );

  app.patch(
    '/api/v1/app/:app_id',
    {
      schema: {
        tags,
        summary: 'Partially update an application',
        params: Params,
        body: ApplicationPatch,
        response: { 200: ApplicationOut },
      },
    },
    async (request) => {
      return save(await requireApp(db, request.params.app_id), request.body, true);
    },
  );

  app.delete(
    '/api/v1/app/:app_id',
    {
      schema: {
        tags,
        summary: 'Delete an application',
        description:
          'Its endpoints stop receiving; messages and attempts stay until the retention period (COURIER_RETENTION) ends.',
        params: Params,
        response: { 204: NoContent },
      },
    },
    async (request, reply) => {
      const current = await requireApp(db, request.params.app_id);
      await db.transaction((tx) => deleteApplication(tx, current.id, clock.now()));
      return reply.code(204).send();
    },
  );
}
