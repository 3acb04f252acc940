import { SECRET_GRACE_DEFAULT_S } from '../../setting-limits.ts';
import { generateSecret } from '../../signing/index.ts';
import { StoreNotFoundError } from '../../store/errors.ts';
import { currentSecret, MAX_PREVIOUS_SECRETS, rotateSecret } from '../../store/repos/endpoints.ts';
import { normalizeSecret } from '../endpoint-input.ts';
import { APP_ENDPOINT, type EndpointScope, OPERATIONAL_ENDPOINT } from '../endpoint-scope.ts';
import { limitReached } from '../errors.ts';
import { NoContent } from '../schemas/common.ts';
import { EndpointSecretOut, EndpointSecretRotateIn } from '../schemas/endpoints.ts';
import type { Api, ApiDeps } from '../types.ts';

const secretRoutes = (scope: EndpointScope) => (app: Api, deps: ApiDeps) => {
  const { db, clock } = deps;
  const { tags, params } = scope;
  const BASE = `${scope.path}/secret`;

  app.get(
    BASE,
    {
      schema: {
        tags,
        summary: "Get the endpoint's signing secret",
        params,
        response: { 200: EndpointSecretOut },
      },
    },
    async (request) => {
      const { endpoint } = await scope.find(db, request.params);
      const key = await currentSecret(db, endpoint.id);
      // Deleted since it was looked up: its secrets expired with it.
      if (key === null) throw new StoreNotFoundError(`endpoint ${endpoint.id} not found`);
      return { key };
    },
  );

  app.post(
    `${BASE}/rotate`,
    {
      schema: {
        tags,
        summary: "Rotate the endpoint's signing secret",
        description:
          'The new secret (generated unless key is given) signs from now on; the previous one keeps signing too ' +
          `for gracePeriodSeconds (Courier extension, default ${SECRET_GRACE_DEFAULT_S / 3600} h), so receivers can switch without failures.`,
        params,
        body: EndpointSecretRotateIn,
        response: { 204: NoContent },
      },
    },
    async (request, reply) => {
      const { endpoint } = await scope.find(db, request.params);
      const body = request.body ?? {};
      const key = body.key ? normalizeSecret(body.key, ['body', 'key']) : generateSecret();
      const graceMs = (body.gracePeriodSeconds ?? SECRET_GRACE_DEFAULT_S) * 1000;
      const outcome = await db.transaction((tx) => rotateSecret(tx, endpoint.id, key, graceMs, clock.now()));
      if (outcome === 'limit_reached') {
        throw limitReached(
          `At most ${MAX_PREVIOUS_SECRETS} earlier secrets sign beside the current one; rotate again once one's grace period is over, or with gracePeriodSeconds 0`,
        );
      }
      return reply.code(204).send();
    },
  );
};

export const endpointSecretRoutes = secretRoutes(APP_ENDPOINT);
export const operationalEndpointSecretRoutes = secretRoutes(OPERATIONAL_ENDPOINT);
