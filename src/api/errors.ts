/**
 * Every error leaves as JSON `{code, detail}` (422: `{code: 'validation', detail: [{loc, msg, type}]}`),
 * the shapes the Svix SDKs parse. Nothing the client sends may produce HTML or a 500.
 */
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import type { Logger } from '../logger.ts';
import { DatabaseUnavailableError } from '../store/db.ts';
import type { RouteTable } from './route-table.ts';
import type { Api } from './types.ts';
import { type ValidationItem, validationItems } from './validation.ts';

export class ApiError extends Error {
  constructor(
    readonly statusCode: number,
    readonly code: string,
    readonly detail: string | ValidationItem[],
  ) {
    super(typeof detail === 'string' ? detail : 'validation failed');
    this.name = 'ApiError';
  }
}

/** Fastify's createError style: a code, a default message and a status; the message can be overridden. */
export function createError(
  code: string,
  message: string,
  statusCode: number,
): (detail?: string) => ApiError {
  return (detail = message) => new ApiError(statusCode, code, detail);
}

export const notFound = createError('not_found', 'Entity not found', 404);
export const conflict = createError('conflict', 'Entity already exists', 409);
export const unauthorized = createError('authentication_failed', 'Invalid or missing token', 401);
export const databaseUnavailable = createError('database_unavailable', 'The database is unavailable', 503);

export function validationFailed(items: ValidationItem[]): ApiError {
  return new ApiError(422, 'validation', items);
}

/** A 422 for one field, e.g. fieldError(['body', 'url'], 'refused: …'). */
export function fieldError(loc: string[], msg: string, type = 'value_error'): ApiError {
  return validationFailed([{ loc, msg, type }]);
}

/** A PostgreSQL unique violation (a concurrent insert of the same uid, name, …). */
export function isUniqueViolation(error: unknown): boolean {
  return (error as { code?: unknown } | null)?.code === '23505';
}

interface Reply {
  status: number;
  body: { code: string; detail: string | ValidationItem[] };
}

// Fastify's own 4xx errors, renamed to stable snake_case codes.
const FASTIFY_CODES: Record<string, string> = {
  FST_ERR_CTP_INVALID_MEDIA_TYPE: 'unsupported_media_type',
  FST_ERR_CTP_BODY_TOO_LARGE: 'payload_too_large',
  FST_ERR_CTP_INVALID_JSON_BODY: 'invalid_json',
  FST_ERR_CTP_EMPTY_JSON_BODY: 'invalid_json',
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: 'bad_request',
  FST_ERR_BAD_URL: 'bad_request',
};

function toReply(error: FastifyError | ApiError | Error): Reply {
  if (error instanceof ApiError)
    return { status: error.statusCode, body: { code: error.code, detail: error.detail } };
  const e = error as FastifyError & { validationContext?: string };
  if (e.validation) {
    return {
      status: 422,
      body: { code: 'validation', detail: validationItems(e.validation, e.validationContext) },
    };
  }
  if (error instanceof DatabaseUnavailableError) {
    return {
      status: 503,
      body: { code: 'database_unavailable', detail: 'The database is unavailable; retry later' },
    };
  }
  // PostgreSQL refusing a value (class 22: data exception) or a duplicate (23505) is the client's doing.
  const sqlState = typeof e.code === 'string' && /^[0-9A-Z]{5}$/.test(e.code) ? e.code : undefined;
  if (sqlState === '23505')
    return { status: 409, body: { code: 'conflict', detail: 'Entity already exists' } };
  if (sqlState?.startsWith('22')) {
    return {
      status: 422,
      body: { code: 'validation', detail: [{ loc: ['body'], msg: e.message, type: 'value_error' }] },
    };
  }
  const status = e.statusCode ?? 500;
  if (status >= 400 && status < 500) {
    // A JSON syntax error thrown by a parser carries no code.
    const code = FASTIFY_CODES[e.code] ?? (error instanceof SyntaxError ? 'invalid_json' : 'bad_request');
    return { status, body: { code, detail: e.message } };
  }
  return { status: 500, body: { code: 'internal_error', detail: 'Internal server error' } };
}

export function sendError(
  error: Error,
  request: FastifyRequest,
  reply: FastifyReply,
  logger: Logger,
): FastifyReply {
  const { status, body } = toReply(error);
  if (status >= 500) {
    logger.error({ err: error, method: request.method, url: request.routeOptions.url }, 'request failed');
  }
  if (status === 401) reply.header('www-authenticate', 'Bearer');
  return reply.code(status).type('application/json; charset=utf-8').send(body);
}

/** Error handler, JSON 404 and 405 for unknown routes and methods, and Fastify's framework errors. */
export function registerErrorHandling(app: Api, routes: RouteTable, logger: Logger): void {
  app.setErrorHandler((error: Error, request, reply) => sendError(error, request, reply, logger));
  app.setNotFoundHandler((request, reply) => {
    const path = request.url.split('?')[0]!;
    const allowed = routes.methodsFor(path).filter((m) => m !== request.method);
    if (allowed.length > 0) {
      reply.header('allow', allowed.join(', '));
      return sendError(
        new ApiError(
          405,
          'method_not_allowed',
          `${request.method} is not allowed on ${path}; use ${allowed.join(', ')}`,
        ),
        request,
        reply,
        logger,
      );
    }
    return sendError(
      new ApiError(404, 'not_found', `No route for ${request.method} ${path}`),
      request,
      reply,
      logger,
    );
  });
}
