/**
 * What an application's token (Svix's app portal access) may call: its own application's
 * endpoints, messages, attempts and background tasks, as its capabilities allow, and the event
 * types' catalogue. Anything not listed here is refused, so a route added later is closed to these
 * tokens until it is listed.
 */
import type { FastifyRequest } from 'fastify';
import type { Queryable } from '../store/db.ts';
import { findApplication } from '../store/repos/applications.ts';
import type { Capability } from './app-capabilities.ts';
import { createError } from './errors.ts';
import type { AppPrincipal } from './types.ts';

export const forbidden = createError('forbidden', 'This token may not do that', 403);

export const APP = '/api/v1/app/:app_id';
export const ENDPOINT = `${APP}/endpoint/:endpoint_id`;

/** Route (method and Fastify pattern) → the capabilities of which the token needs one. */
const RULES: Record<string, readonly Capability[]> = {};
/** A route under the path's application, which the token's must be. */
function allow(capabilities: readonly Capability[], ...routes: string[]): void {
  for (const route of routes) {
    // The application check reads this parameter: a route without it would be open to any token.
    if (!route.includes(APP)) throw new Error(`${route} is not under ${APP}: list it with allowGlobal`);
    RULES[route] = capabilities;
  }
}
/** A route that names no application: the same for every token. */
function allowGlobal(capabilities: readonly Capability[], ...routes: string[]): void {
  for (const route of routes) RULES[route] = capabilities;
}

allow(
  ['ViewBase'],
  `GET ${APP}`,
  `GET ${APP}/endpoint`,
  `GET ${ENDPOINT}`,
  `GET ${ENDPOINT}/stats`,
  `GET ${ENDPOINT}/retry-policy`,
  `GET ${ENDPOINT}/dead-letter`,
  `GET ${ENDPOINT}/msg`,
  `GET ${APP}/msg`,
  `GET ${APP}/msg/:msg_id`,
  `POST ${APP}/msg/precheck/active`,
  `GET ${APP}/attempt/endpoint/:endpoint_id`,
  `GET ${APP}/attempt/msg/:msg_id`,
  `GET ${APP}/msg/:msg_id/endpoint`,
  `GET ${APP}/msg/:msg_id/attempt/:attempt_id`,
);
allowGlobal(['ViewBase'], 'GET /api/v1/event-type', 'GET /api/v1/event-type/:event_type_name');
// The task a replay answered with, as the SDK reads it back: the handlers show a token its own
// application's tasks alone.
allowGlobal(['ViewBase'], 'GET /api/v1/background-task', 'GET /api/v1/background-task/:task_id');
allow(['ViewEndpointSecret', 'ManageEndpointSecret', 'ManageEndpoint'], `GET ${ENDPOINT}/secret`);
allow(['ManageEndpointSecret', 'ManageEndpoint'], `POST ${ENDPOINT}/secret/rotate`);
// Headers often carry the receiver's credentials: configuration, as Svix's ManageEndpoint says.
allow(
  ['ManageEndpoint'],
  `POST ${APP}/endpoint`,
  `PUT ${ENDPOINT}`,
  `PATCH ${ENDPOINT}`,
  `DELETE ${ENDPOINT}`,
  `POST ${ENDPOINT}/pause`,
  `POST ${ENDPOINT}/resume`,
  `GET ${ENDPOINT}/headers`,
  `PUT ${ENDPOINT}/headers`,
  `PATCH ${ENDPOINT}/headers`,
);
allow(
  ['CreateAttempts'],
  `POST ${ENDPOINT}/recover`,
  `POST ${ENDPOINT}/replay-missing`,
  `POST ${ENDPOINT}/bulk-replay`,
  `POST ${ENDPOINT}/dead-letter/replay`,
  `POST ${ENDPOINT}/send-example`,
  `POST ${APP}/msg/:msg_id/endpoint/:endpoint_id/resend`,
);
allowGlobal([], 'POST /api/v1/auth/logout', 'GET /api/v1/auth/session');

/** The event types' feature flags the request's token sees; undefined for the admin token, who sees them all. */
export const flagsOf = (request: FastifyRequest): readonly string[] | undefined =>
  request.principal?.kind === 'app' ? request.principal.featureFlags : undefined;

/** Every route open to an application's token, as `METHOD pattern`. */
export const OPEN_ROUTES: readonly string[] = Object.keys(RULES);

/** The capabilities a token needs one of for this route; undefined: closed to such tokens. */
export function capabilitiesFor(method: string, url: string): readonly Capability[] | undefined {
  return RULES[`${method === 'HEAD' ? 'GET' : method} ${url}`];
}

/**
 * Throws 403 unless the route is open to the token: listed, one of its capabilities held, and its
 * path's application (by id or uid) the token's. Another application, existing or not, is refused
 * alike, so a token learns nothing of others.
 */
export async function authorizeAppToken(
  db: Queryable,
  request: FastifyRequest,
  principal: AppPrincipal,
): Promise<void> {
  const url = request.routeOptions.url ?? '';
  const needed = capabilitiesFor(request.method, url);
  if (needed === undefined) throw forbidden("An application's token may not call this route");
  if (needed.length > 0 && !needed.some((c) => principal.capabilities.has(c))) {
    throw forbidden(`This token lacks the capability this route needs: ${needed.join(' or ')}`);
  }
  const appParam = (request.params as { app_id?: string }).app_id;
  if (appParam === undefined || appParam === principal.appId) return;
  const app = await findApplication(db, appParam);
  if (app?.id !== principal.appId) throw forbidden('This token is for another application');
}
