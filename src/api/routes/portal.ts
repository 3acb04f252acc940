import { PORTAL_HTML, portalCsp } from '../pages/portal-page.ts';
import type { Api, ApiDeps } from '../types.ts';

/** The app portal page: public HTML; what it shows comes from the API with the token its link carries. */
export function portalRoutes(app: Api, deps: ApiDeps): void {
  const csp = portalCsp(deps.config.appPortalFrameAncestors);
  app.get(
    '/portal',
    {
      config: { public: true },
      schema: {
        tags: ['Authentication'],
        summary: 'The app portal page (HTML)',
        description:
          "Where an application's access link leads when COURIER_APP_PORTAL_URL is unset: its owner adds, edits, " +
          "pauses and deletes endpoints, sets their rate limit and custom headers, reads signing secrets, sees attempts, dead letters and the application's messages (a message with its payload, its endpoints and attempts), resends, replays and " +
          "sends examples, as the token's capabilities allow. The token travels after the link's # (in no URL a server sees) and goes to this API alone, as a bearer token.",
      },
    },
    async (_request, reply) =>
      reply
        .type('text/html; charset=utf-8')
        .header('content-security-policy', csp)
        .header('referrer-policy', 'no-referrer')
        .header('cache-control', 'no-store')
        .header('x-content-type-options', 'nosniff')
        .send(PORTAL_HTML),
  );
}
