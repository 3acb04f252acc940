import { type Endpoint, lockLiveEndpoint, updateEndpoint } from '../../store/repos/endpoints.ts';
import { APP_ENDPOINT, type EndpointScope, OPERATIONAL_ENDPOINT } from '../endpoint-scope.ts';
import { notFound } from '../errors.ts';
import { checkHeaders, patchHeaders, withoutSensitive } from '../headers.ts';
import { NoContent } from '../schemas/common.ts';
import { EndpointHeadersIn, EndpointHeadersOut, EndpointHeadersPatchIn } from '../schemas/endpoints.ts';
import type { Api, ApiDeps } from '../types.ts';

const headerRoutes = (scope: EndpointScope) => (app: Api, deps: ApiDeps) => {
  const { db, clock } = deps;
  const { tags, params } = scope;
  const PATH = `${scope.path}/headers`;

  /** Writes the headers computed from the current ones, as locked by the transaction that writes. */
  async function setHeaders(
    endpoint: Endpoint,
    next: (current: Record<string, string>) => Record<string, string>,
  ) {
    await db.transaction(async (tx) => {
      const current = await lockLiveEndpoint(tx, endpoint.id);
      if (!current) throw notFound(`Endpoint ${endpoint.id} not found`);
      await updateEndpoint(tx, endpoint.id, { ...current, headers: next(current.headers) }, clock.now());
    });
  }

  app.get(
    PATH,
    {
      schema: {
        tags,
        summary: "Get the endpoint's custom headers",
        description:
          'Credential headers (Authorization, X-Auth-Token, …) are not returned: their names are in sensitive.',
        params,
        response: { 200: EndpointHeadersOut },
      },
    },
    async (request) => {
      const { endpoint } = await scope.find(db, request.params);
      return withoutSensitive(endpoint.headers);
    },
  );

  app.put(
    PATH,
    {
      schema: {
        tags,
        summary: "Replace the endpoint's custom headers",
        description:
          'Names must be HTTP tokens; values must not contain CR, LF or NUL. Names Courier sets (webhook-*, svix-*, ' +
          'content-type, content-length, host, user-agent, transfer-encoding, connection) are refused.',
        params,
        body: EndpointHeadersIn,
        response: { 204: NoContent },
      },
    },
    async (request, reply) => {
      checkHeaders(request.body.headers, ['body', 'headers']);
      const { endpoint } = await scope.find(db, request.params);
      await setHeaders(endpoint, () => request.body.headers);
      return reply.code(204).send();
    },
  );

  app.patch(
    PATH,
    {
      schema: {
        tags,
        summary: "Add, replace or delete some of the endpoint's custom headers",
        params,
        body: EndpointHeadersPatchIn,
        response: { 204: NoContent },
      },
    },
    async (request, reply) => {
      const { headers, deleteHeaders } = request.body;
      checkHeaders(headers, ['body', 'headers']);
      const { endpoint } = await scope.find(db, request.params);
      await setHeaders(endpoint, (current) => {
        const merged = patchHeaders(current, headers, deleteHeaders ?? []);
        checkHeaders(merged, ['body', 'headers']);
        return merged;
      });
      return reply.code(204).send();
    },
  );
};

export const endpointHeaderRoutes = headerRoutes(APP_ENDPOINT);
export const operationalEndpointHeaderRoutes = headerRoutes(OPERATIONAL_ENDPOINT);
