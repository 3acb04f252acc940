import { type Endpoint, lockLiveEndpoint, updateEndpoint } from '../../store/repos/endpoints.ts';
import { notFound } from '../errors.ts';
import { checkHeaders, patchHeaders, withoutSensitive } from '../headers.ts';
import { requireEndpoint } from '../lookup.ts';
import { NoContent } from '../schemas/common.ts';
import {
  EndpointHeadersIn,
  EndpointHeadersOut,
  EndpointHeadersPatchIn,
  EndpointParams,
} from '../schemas/endpoints.ts';
import type { Api, ApiDeps } from '../types.ts';

const tags = ['Endpoint'];
const PATH = '/api/v1/app/:app_id/endpoint/:endpoint_id/headers';

export function endpointHeaderRoutes(app: Api, deps: ApiDeps): void {
  const { db, clock } = deps;

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
        params: EndpointParams,
        response: { 200: EndpointHeadersOut },
      },
    },
    async (request) => {
      const { endpoint } = await requireEndpoint(db, request.params.app_id, request.params.endpoint_id);
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
        params: EndpointParams,
        body: EndpointHeadersIn,
        response: { 204: NoContent },
      },
    },
    async (request, reply) => {
      checkHeaders(request.body.headers, ['body', 'headers']);
      const { endpoint } = await requireEndpoint(db, request.params.app_id, request.params.endpoint_id);
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
        params: EndpointParams,
        body: EndpointHeadersPatchIn,
        response: { 204: NoContent },
      },
    },
    async (request, reply) => {
      const { headers, deleteHeaders } = request.body;
      checkHeaders(headers, ['body', 'headers']);
      const { endpoint } = await requireEndpoint(db, request.params.app_id, request.params.endpoint_id);
      await setHeaders(endpoint, (current) => {
        const merged = patchHeaders(current, headers, deleteHeaders ?? []);
        checkHeaders(merged, ['body', 'headers']);
        return merged;
      });
      return reply.code(204).send();
    },
  );
}
