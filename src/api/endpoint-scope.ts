/**
 * Where an endpoint's sub-resources (secret, headers) hang: under an application's endpoints, or
 * under Svix's operational webhook endpoints (the operator application's).
 */
import type { Static, TSchema } from 'typebox';
import { findOperationalEndpoint } from '../dispatch/operator-webhook.ts';
import type { Queryable } from '../store/db.ts';
import type { Application } from '../store/repos/applications.ts';
import { type Endpoint, listEndpoints } from '../store/repos/endpoints.ts';
import { notFound } from './errors.ts';
import { requireEndpoint } from './lookup.ts';
import { type ListParams, paginate } from './pagination.ts';
import { EndpointParams, endpointOut } from './schemas/endpoints.ts';
import { OperationalEndpointParams } from './schemas/operational-webhook.ts';

/** A page of an application's endpoints, newest first as Svix lists them (none without one). */
export function endpointPage(db: Queryable, appId: string | null, query: ListParams) {
  return paginate(
    query,
    'descending',
    async (w) => (appId ? listEndpoints(db, appId, w) : { data: [], done: true }),
    (e) => e.id,
    endpointOut,
  );
}

export interface EndpointScope {
  /** The endpoint's path, its sub-resources' base. */
  path: string;
  tags: string[];
  params: TSchema;
  /** The application and endpoint the path's parameters name; 404 when none. */
  find(db: Queryable, params: unknown): Promise<{ app: Application; endpoint: Endpoint }>;
}

export const APP_ENDPOINT: EndpointScope = {
  path: '/api/v1/app/:app_id/endpoint/:endpoint_id',
  tags: ['Endpoint'],
  params: EndpointParams,
  find: (db, params) => {
    const { app_id, endpoint_id } = params as Static<typeof EndpointParams>;
    return requireEndpoint(db, app_id, endpoint_id);
  },
};

/** An operational webhook endpoint: none when no operator application was made yet. */
export async function requireOperationalEndpoint(
  db: Queryable,
  idOrUid: string,
): Promise<{ app: Application; endpoint: Endpoint }> {
  const found = await findOperationalEndpoint(db, idOrUid);
  if (!found) throw notFound(`Operational webhook endpoint ${idOrUid} not found`);
  return found;
}

export const OPERATIONAL_ENDPOINT: EndpointScope = {
  path: '/api/v1/operational-webhook/endpoint/:endpoint_id',
  tags: ['Operational Webhook Endpoint'],
  params: OperationalEndpointParams,
  find: (db, params) =>
    requireOperationalEndpoint(db, (params as Static<typeof OperationalEndpointParams>).endpoint_id),
};
