/**
 * What the app portal's token may do: each action's capabilities come from the API's own rule
 * table (app-token-access.ts) as the page is built, and the token's own from GET /auth/session,
 * read at each navigation (an operator's expire-all may have moved its end meanwhile), so the views
 * offer only what the API would allow.
 */

import { SECRET_GRACE_DEFAULT_S } from '../../setting-limits.ts';
import { MAX_PREVIOUS_SECRETS } from '../../store/repos/endpoints.ts';
import { APP, capabilitiesFor, ENDPOINT } from '../app-token-access.ts';

/**
 * For each route an action calls (`METHOD pattern`), the capabilities of which the token needs one
 * (none: open to every token); a route missing from the table stops Courier at start-up.
 */
function needs(...routes: string[]): (readonly string[])[] {
  return routes.map((route) => {
    const [method, url] = route.split(' ') as [string, string];
    const capabilities = capabilitiesFor(method, url);
    if (!capabilities) throw new Error(`${route} is not open to an application's token`);
    return capabilities;
  });
}

/** The page's actions by every route each calls. */
const NEEDS = {
  add: needs(`POST ${APP}/endpoint`),
  edit: needs(`PATCH ${ENDPOINT}`),
  pause: needs(`POST ${ENDPOINT}/pause`, `POST ${ENDPOINT}/resume`),
  remove: needs(`DELETE ${ENDPOINT}`),
  headers: needs(`GET ${ENDPOINT}/headers`, `PATCH ${ENDPOINT}/headers`),
  secret: needs(`GET ${ENDPOINT}/secret`),
  rotate: needs(`POST ${ENDPOINT}/secret/rotate`, `GET ${ENDPOINT}/secret`),
  example: needs(`POST ${ENDPOINT}/send-example`),
  resend: needs(`POST ${APP}/msg/:msg_id/endpoint/:endpoint_id/resend`),
  replay: needs(`POST ${ENDPOINT}/dead-letter/replay`),
};

export const PORTAL_ACCESS = `
const NEEDS = ${JSON.stringify(NEEDS)};
/** How long a rotated secret's predecessor still signs, as the API rotates by default. */
const GRACE = '${SECRET_GRACE_DEFAULT_S / 3600} hours';
/** How many earlier secrets may sign beside the current one: past it, the API rotates only with no grace period. */
const MAX_PREVIOUS_SECRETS = ${MAX_PREVIOUS_SECRETS};
// Each token's answer, kept with the session it is for: one token's never decides for another's.
const granted = new WeakMap();
/**
 * The token's capabilities and end; an earlier release's API without the route (404, during a
 * rolling upgrade) says neither, and every action is offered, the API still refusing what the
 * token may not do.
 */
async function readAccess() {
  const as = session;
  let answer = { capabilities: null, expiresAt: null };
  try {
    // An answer without a body (a proxy's) says nothing either.
    answer = (await api('GET', '/auth/session', undefined, as)) || answer;
  } catch (error) {
    if (error.status !== 404) throw error;
  }
  granted.set(as, answer);
  return answer;
}
/** Whether the token may take the action (a key of NEEDS): every route it calls open to it; not known: yes, and the API decides. */
function can(action) {
  const answer = granted.get(session);
  if (!answer || !answer.capabilities) return true;
  return NEEDS[action].every((route) => route.length === 0 || route.some((name) => answer.capabilities.includes(name)));
}
`;
