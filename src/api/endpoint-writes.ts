/**
 * Creating, changing and deleting an endpoint, with its operational event in the same transaction:
 * shared by an application's endpoint routes and the operational webhook's (whose endpoints are the
 * operator application's).
 */
import type { FastifyRequest } from 'fastify';
import { isValidUid, newId } from '../ids.ts';
import { generateSecret } from '../signing/index.ts';
import type { Queryable } from '../store/db.ts';
import type { Application } from '../store/repos/applications.ts';
import {
  createEndpoint,
  deleteEndpoint,
  type Endpoint,
  findEndpoint,
  getEndpointById,
  lockLiveEndpoint,
  rotateSecret,
  updateEndpoint,
} from '../store/repos/endpoints.ts';
import { shownEventTypeNames } from '../store/repos/event-types.ts';
import { recordEndpointEvent } from './endpoint-events.ts';
import { alias, type EndpointBody, endpointInput, type Writer } from './endpoint-input.ts';
import { applyDisabled } from './endpoint-status.ts';
import { conflict, isUidTaken, notFound } from './errors.ts';
import { createOnce } from './idempotency.ts';
import type { ApiDeps } from './types.ts';

async function uidFree(q: Queryable, appId: string, uid: string | null | undefined, self?: string) {
  if (!uid) return;
  const other = await findEndpoint(q, appId, uid);
  if (other && other.id !== self) throw conflict(`An endpoint with uid ${uid} already exists`);
}

/**
 * The event types an application's token names in the endpoint's filter without seeing them (none
 * such, archived, or behind a feature flag it lacks), those the endpoint has aside: answered alike,
 * as Svix answers a name that is not there, so a token learns nothing of hidden ones and cannot
 * name them (an endpoint without a filter still takes every type, flagged ones too, as in Svix).
 * The operator names any.
 */
async function unseenTypes(
  q: Queryable,
  body: EndpointBody,
  current: Endpoint | null,
  writer: Writer,
): Promise<string[]> {
  if (writer === 'operator') return [];
  const named = alias(body.filterTypes, body.eventTypes) ?? [];
  const added = named.filter((name) => !current?.eventTypes?.includes(name));
  if (added.length === 0) return [];
  const shown = await shownEventTypeNames(q, added, writer.featureFlags);
  return added.filter((name) => !shown.has(name));
}

/** By a POST (`request`: once, under its idempotency key's id) or by a PUT naming a new uid. */
export async function createEndpointOf(
  deps: ApiDeps,
  application: Application,
  body: EndpointBody,
  uid: string | null,
  writer: Writer,
  request?: FastifyRequest,
): Promise<Endpoint> {
  const { db, clock, config } = deps;
  const unseen = await unseenTypes(db, body, null, writer);
  const input = endpointInput(body, 'replace', null, config, application, writer, unseen);
  const fields = { ...input.fields, uid };
  const secret = input.secret ?? generateSecret();
  const now = clock.now();
  const make = async (id: string) => {
    await uidFree(db, application.id, uid);
    return db.transaction(async (tx) => {
      const disabledBy = !body.disabled ? undefined : writer === 'operator' ? 'operator' : 'owner';
      const made = await createEndpoint(tx, { id, appId: application.id, fields, secret, disabledBy, now });
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
export async function updateEndpointOf(
  deps: ApiDeps,
  application: Application,
  found: Endpoint,
  body: EndpointBody,
  mode: 'replace' | 'patch',
  writer: Writer,
): Promise<Endpoint> {
  const { db, clock, config } = deps;
  const disabled = mode === 'replace' ? (body.disabled ?? false) : body.disabled;
  return db.transaction(async (tx) => {
    const current = await lockLiveEndpoint(tx, found.id);
    // Deleted since it was looked up (a concurrent DELETE): a 404, as if the lookup had missed.
    if (!current) throw notFound(`Endpoint ${found.id} not found`);
    const unseen = await unseenTypes(tx, body, current, writer);
    const { fields, secret } = endpointInput(body, mode, current, config, application, writer, unseen);
    await uidFree(tx, application.id, fields.uid, current.id);
    const now = clock.now();
    await updateEndpoint(tx, current.id, fields, now);
    if (secret) await rotateSecret(tx, current.id, secret, 0, now);
    const updated = (await getEndpointById(tx, current.id))!;
    await recordEndpointEvent(tx, deps, 'endpoint.updated', application, updated);
    await applyDisabled(tx, application, updated, disabled, deps, writer);
    return (await getEndpointById(tx, current.id))!;
  });
}

/**
 * PUT: replaces the endpoint `idOrUid` names, or creates it when a uid names none (an id that is
 * not there is a 404). `created` tells which.
 */
export async function putEndpoint(
  deps: ApiDeps,
  application: Application,
  idOrUid: string,
  body: EndpointBody,
  writer: Writer,
): Promise<{ endpoint: Endpoint; created: boolean }> {
  // Named by its uid, it keeps it: the same PUT repeated must not clear the uid and then
  // create another endpoint under it (each message would then go to both).
  const replace = async (current: Endpoint) => {
    const keepUid = body.uid === undefined && current.uid === idOrUid;
    const next = keepUid ? { ...body, uid: idOrUid } : body;
    return {
      endpoint: await updateEndpointOf(deps, application, current, next, 'replace', writer),
      created: false,
    };
  };
  const current = await findEndpoint(deps.db, application.id, idOrUid);
  if (current) return replace(current);
  if (!isValidUid(idOrUid)) throw notFound(`Endpoint ${idOrUid} not found`);
  try {
    return {
      endpoint: await createEndpointOf(deps, application, body, body.uid ?? idOrUid, writer),
      created: true,
    };
  } catch (error) {
    // A concurrent PUT of the same uid created it first: this one replaces what that one made.
    const raced = isUidTaken(error) ? await findEndpoint(deps.db, application.id, idOrUid) : null;
    if (raced) return replace(raced);
    throw error;
  }
}

/** Deletes it, recording endpoint.deleted as the row was when locked. */
export async function deleteEndpointOf(
  deps: ApiDeps,
  application: Application,
  endpoint: Endpoint,
): Promise<void> {
  await deps.db.transaction(async (tx) => {
    // Deleted meanwhile by a concurrent DELETE: a 404, as if the lookup had missed.
    const current = await lockLiveEndpoint(tx, endpoint.id);
    if (!current) throw notFound(`Endpoint ${endpoint.id} not found`);
    await deleteEndpoint(tx, endpoint.id, deps.clock.now());
    // As locked: a uid changed since the lookup is the one the event names.
    await recordEndpointEvent(tx, deps, 'endpoint.deleted', application, current);
  });
}
