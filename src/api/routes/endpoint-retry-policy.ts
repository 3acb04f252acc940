/**
 * Courier extension: the retry policy an endpoint's deliveries follow, as the installation's
 * configuration, its application's overrides and its own make it (the worker's layering).
 */
import type { Static } from 'typebox';
import { effectivePolicy } from '../../dispatch/policy-resolver.ts';
import type { PolicyOverrides } from '../../policy/index.ts';
import { requireEndpoint } from '../lookup.ts';
import { EndpointParams } from '../schemas/endpoints.ts';
import { EndpointRetryPolicyOut, type RetryPolicyOut } from '../schemas/policy.ts';
import type { Api, ApiDeps } from '../types.ts';

export function endpointRetryPolicyRoutes(app: Api, deps: ApiDeps): void {
  const { db, config } = deps;

  app.get(
    '/api/v1/app/:app_id/endpoint/:endpoint_id/retry-policy',
    {
      schema: {
        tags: ['Endpoint'],
        summary: 'Get the retry policy of an endpoint (Courier extension)',
        description:
          'Courier extension. The policy its next attempts follow (a delivery already tried keeps the give-up time ' +
          "its first attempt fixed, a retry already scheduled its time): this server's configuration (COURIER_RETRY_*), the " +
          "application's overrides over it, the endpoint's over both (classifier, retryAfter and giveUp " +
          'field by field, a backoff replacing the one below whole); with the two layers of overrides as ' +
          'they are set. Workers configured otherwise apply their own configuration under the same overrides.',
        params: EndpointParams,
        response: { 200: EndpointRetryPolicyOut },
      },
    },
    async (request) => {
      const { app: application, endpoint } = await requireEndpoint(
        db,
        request.params.app_id,
        request.params.endpoint_id,
      );
      const layers = [application.retryPolicy, endpoint.retryPolicy] as (PolicyOverrides | null)[];
      const policy = effectivePolicy(config.retry, ...layers);
      return {
        policy: { ...policy, classifier: { overrides: {}, ...policy.classifier } } as Static<
          typeof RetryPolicyOut
        >,
        application: application.retryPolicy ?? null,
        endpoint: endpoint.retryPolicy ?? null,
      };
    },
  );
}
