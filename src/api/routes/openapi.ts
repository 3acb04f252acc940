import { DOCS_CSP, DOCS_HTML } from '../openapi/docs-page.ts';
import { openApiDocument } from '../openapi/document.ts';
import type { RouteTable } from '../route-table.ts';
import type { Api } from '../types.ts';

export const API_VERSION = '1.0.0';

export function openApiRoutes(app: Api, routes: RouteTable): void {
  let document: Record<string, unknown> | undefined;

  app.get(
    '/openapi.json',
    { config: { public: true }, schema: { tags: ['Reference'], summary: 'This OpenAPI 3.1 document' } },
    async () => {
      document ??= openApiDocument(routes.routes, API_VERSION);
      return document;
    },
  );

  app.get(
    '/docs',
    { config: { public: true }, schema: { tags: ['Reference'], summary: 'Browsable API reference (HTML)' } },
    async (_request, reply) =>
      reply.type('text/html; charset=utf-8').header('content-security-policy', DOCS_CSP).send(DOCS_HTML),
  );
}
