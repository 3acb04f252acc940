import type { Static } from 'typebox';
import { OPERATOR_APP_UID } from '../../dispatch/operator-uids.ts';
import { deleteAppToken, expireAppTokens, insertAppToken } from '../../store/repos/app-tokens.ts';
import { hashToken } from '../../store/repos/tokens.ts';
import { CAPABILITIES, type Capability, MAX_EXPIRY_S } from '../app-capabilities.ts';
import { appOnDemand } from '../app-on-demand.ts';
import { forbidden } from '../app-token-access.ts';
import { generateAppToken } from '../auth.ts';
import { fieldError } from '../errors.ts';
import { requireApp } from '../lookup.ts';
import {
  ApplicationTokenExpireIn,
  AppPortalAccessIn,
  AppPortalAccessOut,
  TokenSessionOut,
} from '../schemas/auth.ts';
import { NoContent } from '../schemas/common.ts';
import type { Api, ApiDeps } from '../types.ts';
import { AppParams } from './messages.ts';

const tags = ['Authentication'];
const BASE = '/api/v1/auth';

type AccessBody = Static<typeof AppPortalAccessIn>;

/** The token's capabilities: those asked for (ViewBase among them), ViewBase alone for readOnly, else all. */
function capabilitiesOf(body: AccessBody): readonly Capability[] {
  const asked = body.capabilities ?? null;
  if (body.readOnly === true) {
    if (asked?.some((c) => c !== 'ViewBase')) {
      throw fieldError(
        ['body', 'capabilities'],
        'readOnly allows ViewBase alone: give readOnly or capabilities',
      );
    }
    return ['ViewBase'];
  }
  if (asked === null) return CAPABILITIES;
  if (!asked.includes('ViewBase')) throw fieldError(['body', 'capabilities'], 'must include ViewBase');
  return asked;
}

/**
 * Svix's app portal access: a token for one application's part of the API (app-token-access.ts),
 * to hand to the application's owner. The link is COURIER_APP_PORTAL_URL's, or Courier's own
 * portal page (routes/portal.ts) with the token after the #.
 */
export function appPortalAccessRoutes(app: Api, deps: ApiDeps): void {
  const { db, clock, config } = deps;

  async function grant(appId: string, body: AccessBody, origin: string) {
    const capabilities = capabilitiesOf(body);
    const application = await appOnDemand(deps, appId, body.application, ['body', 'application']);
    if (application.uid === OPERATOR_APP_UID) {
      // Its messages are every application's operational events: for the operator alone.
      throw fieldError(
        ['path', 'app_id'],
        "the operator application's events are for the operator: it gets no token",
      );
    }
    const token = generateAppToken();
    const now = clock.now();
    await insertAppToken(db, {
      appId: application.id,
      hash: hashToken(token),
      capabilities,
      featureFlags: body.featureFlags ?? [],
      sessionId: body.sessionId ?? null,
      now,
      expiresAt: now + (body.expiry ?? MAX_EXPIRY_S) * 1000,
    });
    const url = config.appPortalUrl
      ? config.appPortalUrl
          .replaceAll('{app_id}', encodeURIComponent(application.id))
          .replaceAll('{token}', encodeURIComponent(token))
      : `${origin}/portal#app=${encodeURIComponent(application.id)}&key=${encodeURIComponent(token)}`;
    return { url, token };
  }

  // A trusted proxy's X-Forwarded-Proto is taken as https or http, nothing else.
  const origin = (request: { protocol: string; host: string }) =>
    `${request.protocol === 'https' ? 'https' : 'http'}://${request.host}`;

  app.post(
    `${BASE}/app-portal-access/:app_id`,
    {
      config: { credentialAnswer: true },
      schema: {
        tags,
        summary: "Get a token for an application's part of the API",
        description:
          'A token that opens this application alone (its endpoints, messages, attempts, background tasks and the ' +
          'event types), as its capabilities allow, for 7 days by default; with `application`, a missing ' +
          'application is made ' +
          'under the uid in the path. An idempotency-key is not honoured: the answer holds a credential, which ' +
          'Courier does not keep; a repeat makes another token.',
        params: AppParams,
        body: AppPortalAccessIn,
        response: { 200: AppPortalAccessOut },
      },
    },
    async (request) => grant(request.params.app_id, request.body, origin(request)),
  );

  app.post(
    `${BASE}/dashboard-access/:app_id`,
    {
      config: { credentialAnswer: true },
      schema: {
        tags,
        summary: "Get a token for an application's part of the API (deprecated by Svix)",
        description: 'As app-portal-access with no options: every capability, 7 days.',
        params: AppParams,
        response: { 200: AppPortalAccessOut },
      },
    },
    async (request) => grant(request.params.app_id, {}, origin(request)),
  );

  app.post(
    `${BASE}/app/:app_id/expire-all`,
    {
      schema: {
        tags,
        summary: "Expire an application's tokens",
        description:
          'Every token of the application, or those of the sessions named, expires in `expiry` seconds (now by ' +
          'default); none is made to last longer than it was to.',
        params: AppParams,
        body: ApplicationTokenExpireIn,
        response: { 204: NoContent },
      },
    },
    async (request, reply) => {
      const application = await requireApp(db, request.params.app_id);
      const at = clock.now() + (request.body.expiry ?? 0) * 1000;
      await expireAppTokens(db, application.id, at, request.body.sessionIds ?? []);
      return reply.code(204).send();
    },
  );

  app.post(
    `${BASE}/logout`,
    {
      schema: {
        tags,
        summary: "End this application's token",
        description:
          "The token this request is made with stops working at once. Only an application's token logs out.",
        response: { 204: NoContent },
      },
    },
    async (request, reply) => {
      const principal = request.principal!;
      if (principal.kind !== 'app')
        throw forbidden("Only an application's token logs out; this is an admin token");
      await deleteAppToken(db, principal.tokenId);
      return reply.code(204).send();
    },
  );

  app.get(
    `${BASE}/session`,
    {
      schema: {
        tags,
        summary: 'What this token is (Courier extension)',
        description:
          'Courier extension. The token this request is made with: its application, capabilities and when it ends ' +
          '(the app portal offers only what the token may do); for the admin token, every capability. Its feature ' +
          'flags are not told: a flag may name a plan or another customer.',
        response: { 200: TokenSessionOut },
      },
    },
    async (request) => {
      const principal = request.principal!;
      if (principal.kind !== 'app') {
        return {
          kind: 'admin' as const,
          appId: null,
          capabilities: [...CAPABILITIES],
          expiresAt: null,
        };
      }
      return {
        kind: 'application' as const,
        appId: principal.appId,
        capabilities: CAPABILITIES.filter((c) => principal.capabilities.has(c)),
        expiresAt: new Date(principal.expiresAt).toISOString(),
      };
    },
  );
}
