/**
 * The HTTP API: Svix API v1 routes plus Courier's extensions, on Fastify. buildServer wires the
 * cross-cutting parts (errors, validation, authentication, idempotency, request logs) and the
 * resource routes; it does not listen (`courier serve` does).
 */
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Fastify, { type FastifyInstance } from 'fastify';
import type { Clock } from '../clock.ts';
import type { Config } from '../config.ts';
import { type Logger, silentLogger } from '../logger.ts';
import type { CourierMetrics } from '../metrics/metrics.ts';
import { type Random, systemRandom } from '../random.ts';
import type { Database } from '../store/db.ts';
import { registerAuth } from './auth.ts';
import { clientErrorHandler, refuseConnect, registerErrorHandling, sendError } from './errors.ts';
import { registerIdempotency } from './idempotency.ts';
import { registerJsonBody } from './json-body.ts';
import { retryingDeadlocks } from './retry.ts';
import { type RouteRecord, RouteTable } from './route-table.ts';
import { appPortalAccessRoutes } from './routes/app-portal-access.ts';
import { applicationRoutes } from './routes/applications.ts';
import { attemptRoutes } from './routes/attempts.ts';
import { backgroundTaskRoutes } from './routes/background-tasks.ts';
import { deadLetterRoutes } from './routes/dead-letter.ts';
import { endpointExampleRoutes } from './routes/endpoint-example.ts';
import { endpointHeaderRoutes, operationalEndpointHeaderRoutes } from './routes/endpoint-headers.ts';
import { endpointMessageRoutes } from './routes/endpoint-messages.ts';
import { endpointRecoveryRoutes } from './routes/endpoint-recovery.ts';
import { endpointRetryPolicyRoutes } from './routes/endpoint-retry-policy.ts';
import { endpointSecretRoutes, operationalEndpointSecretRoutes } from './routes/endpoint-secrets.ts';
import { endpointStatsRoutes } from './routes/endpoint-stats.ts';
import { endpointRoutes } from './routes/endpoints.ts';
import { environmentRoutes } from './routes/environment.ts';
import { eventTypeImportRoutes } from './routes/event-type-import.ts';
import { eventTypeRoutes } from './routes/event-types.ts';
import { healthRoutes } from './routes/health.ts';
import { messageContentRoutes } from './routes/message-content.ts';
import { messageRoutes } from './routes/messages.ts';
import { openApiRoutes } from './routes/openapi.ts';
import { operationalEventRoutes } from './routes/operational-events.ts';
import { operationalEndpointRoutes } from './routes/operational-webhook-endpoints.ts';
import { portalRoutes } from './routes/portal.ts';
import { usageStatsRoutes } from './routes/usage-stats.ts';
import { lazySerializers } from './serializers.ts';
import type { Api, ApiDeps } from './types.ts';
import { compileValidator } from './validation.ts';

export interface ServerDeps {
  db: Database;
  config: Config;
  clock: Clock;
  logger?: Logger;
  random?: Random;
  /** Counts the requests answered (COURIER_METRICS_PORT); absent: not counted. */
  metrics?: Pick<CourierMetrics, 'requestServed'>;
}

const TABLES = new WeakMap<FastifyInstance, RouteTable>();

/** Every route the server registered (from Fastify's onRoute hook): for tests and tooling. */
export function routesOf(app: FastifyInstance): readonly RouteRecord[] {
  return TABLES.get(app)?.routes ?? [];
}

const RESOURCE_ROUTES = [
  healthRoutes,
  applicationRoutes,
  endpointRoutes,
  endpointSecretRoutes,
  endpointHeaderRoutes,
  endpointStatsRoutes,
  endpointRetryPolicyRoutes,
  deadLetterRoutes,
  endpointRecoveryRoutes,
  backgroundTaskRoutes,
  endpointExampleRoutes,
  messageRoutes,
  messageContentRoutes,
  attemptRoutes,
  endpointMessageRoutes,
  eventTypeRoutes,
  eventTypeImportRoutes,
  environmentRoutes,
  usageStatsRoutes,
  operationalEventRoutes,
  operationalEndpointRoutes,
  operationalEndpointSecretRoutes,
  operationalEndpointHeaderRoutes,
  appPortalAccessRoutes,
  portalRoutes,
];

export async function buildServer(input: ServerDeps): Promise<FastifyInstance> {
  const random = input.random ?? systemRandom;
  const deps: ApiDeps = {
    ...input,
    db: retryingDeadlocks(input.db, random),
    logger: input.logger ?? silentLogger,
    random,
  };
  const { logger } = deps;
  const routes = new RouteTable();

  const app: Api = Fastify({
    logger: false, // requests are logged below through Courier's logger, without headers
    bodyLimit: deps.config.maxPayloadBytes,
    return503OnClosing: true,
    // Fastify's default is none: a client that sent part of a request and went silent would hold
    // its connection, and a graceful shutdown waiting for it, for ever.
    requestTimeout: 30_000,
    // X-Forwarded-Proto and -Host read only from the operator's own proxies, which set them.
    trustProxy: deps.config.trustProxy.length > 0 ? deps.config.trustProxy : false,
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: 512 },
    frameworkErrors: (error, request, reply) => {
      sendError(error, request, reply, logger);
    },
    clientErrorHandler,
    schemaController: { compilersFactory: { buildSerializer: lazySerializers } },
  }).withTypeProvider<TypeBoxTypeProvider>();
  app.server.on('connect', (_request, socket) => refuseConnect(socket));

  // Only JSON bodies: anything else is a 415 rather than a string that fails validation later.
  app.removeContentTypeParser('text/plain');
  registerJsonBody(app);
  app.setValidatorCompiler(compileValidator);
  app.addHook('onRoute', (options) => routes.add(options));
  registerErrorHandling(app, routes, logger);
  registerAuth(app, deps);
  registerIdempotency(app, deps);
  app.addHook('onResponse', async (request, reply) => {
    const entry = {
      method: request.method,
      route: request.routeOptions.url ?? request.url.split('?')[0],
      statusCode: reply.statusCode,
      durationMs: Math.round(reply.elapsedTime),
    };
    if (entry.route?.startsWith('/health')) logger.debug(entry, 'request');
    else logger.info(entry, 'request');
    input.metrics?.requestServed(
      request.method,
      request.routeOptions.url,
      reply.statusCode,
      reply.elapsedTime,
    );
  });

  for (const register of RESOURCE_ROUTES) register(app, deps);
  openApiRoutes(app, routes);
  await app.ready();
  const instance = app as unknown as FastifyInstance;
  TABLES.set(instance, routes);
  return instance;
}
