/**
 * Every error leaves as JSON `{code, detail}` (422: `{code: 'validation', detail: [{loc, msg, type}]}`),
 * the shapes the Svix SDKs parse. Nothing the client sends may produce HTML or a 500.
 */
import { STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import type { Logger } from '../logger.ts';
import { DatabaseUnavailableError } from '../store/db.ts';
import { StoreNotFoundError } from '../store/errors.ts';
import type { RouteTable } from './route-table.ts';
import { unimplementedSvixFeature } from './svix-unimplemented.ts';
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
export const attemptUnderWay = createError('attempt_in_progress', 'An attempt is under way', 409);
export const payloadExpunged = createError('payload_expunged', 'The message payload was deleted', 409);
export const unauthorized = createError('authentication_failed', 'Invalid or missing token', 401);
export const limitReached = createError('limit_reached', 'A limit was reached', 400);
export const databaseUnavailable = createError('database_unavailable', 'The database is unavailable', 503);

export function validationFailed(items: ValidationItem[]): ApiError {
  return new ApiError(422, 'validation', items);
}

/** A 422 for one field, e.g. fieldError(['body', 'url'], 'refused: …'). */
export function fieldError(loc: string[], msg: string, type = 'value_error'): ApiError {
  return validationFailed([{ loc, msg, type }]);
}

/**
 * Checks that each throw a 422, run so that one 422 names every field refused: a client corrects
 * them all at once. `check` answers the check's value, or `otherwise` when it refused.
 */
export function fieldChecks() {
  const refused: ValidationItem[] = [];
  // One reason per field: the first check to refuse it.
  const add = (item: ValidationItem) => {
    const loc = item.loc.join('.');
    if (!refused.some((other) => other.loc.join('.') === loc)) refused.push(item);
  };
  return {
    check<T>(run: () => T, otherwise: T): T {
      try {
        return run();
      } catch (error) {
        if (!(error instanceof ApiError) || typeof error.detail === 'string') throw error;
        error.detail.forEach(add);
        return otherwise;
      }
    },
    /** Refuses one field, as fieldError would. */
    refuse(loc: string[], msg: string, type = 'value_error'): void {
      add({ loc, msg, type });
    },
    /** Throws the 422 naming them all, if any. */
    done(): void {
      if (refused.length > 0) throw validationFailed(refused);
    },
  };
}

/** A PostgreSQL unique violation (a concurrent insert of the same uid, name, …). */
export function isUniqueViolation(error: unknown): boolean {
  return (error as { code?: unknown } | null)?.code === '23505';
}

/** A uid taken: by a row committed before our check (409 conflict), or caught by the unique index after it. */
export function isUidTaken(error: unknown): boolean {
  return isUniqueViolation(error) || (error instanceof ApiError && error.statusCode === 409);
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
  if (error instanceof StoreNotFoundError) {
    return { status: 404, body: { code: 'not_found', detail: error.message } };
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

/** A whole HTTP/1.1 error response, for sockets no request object exists for. */
export function rawErrorResponse(status: number, code: string, detail: string): string {
  const body = JSON.stringify({ code, detail });
  return (
    `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? 'Error'}\r\n` +
    'Content-Type: application/json; charset=utf-8\r\n' +
    `Content-Length: ${Buffer.byteLength(body)}\r\n` +
    'Connection: close\r\n\r\n' +
    body
  );
}

/**
 * Fastify's clientErrorHandler: requests Node's HTTP parser refuses (CR, LF or NUL in a header,
 * a method that is not a token, bad framing, headers over the size limit) never reach the error
 * handler. Fastify's default answers `{error, message, statusCode}`; this answers `{code, detail}`.
 */
export function clientErrorHandler(error: Error & { code?: string; reason?: string }, socket: Duplex): void {
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  let response: string;
  if (error.code === 'HPE_HEADER_OVERFLOW') {
    response = rawErrorResponse(431, 'headers_too_large', 'The request line and headers are too large');
  } else if (error.code === 'ERR_HTTP_REQUEST_TIMEOUT') {
    response = rawErrorResponse(408, 'request_timeout', 'The request took too long to arrive');
  } else {
    const reason = error.reason ?? error.message;
    response = rawErrorResponse(400, 'bad_request', `Malformed HTTP request: ${reason}`);
  }
  if (socket.writable) socket.write(response);
  socket.destroy(error);
}

/** CONNECT (proxy tunnelling) never reaches Fastify; Node would drop the connection without an answer. */
export function refuseConnect(socket: Duplex): void {
  socket.on('error', () => {}); // a client gone already: nothing to answer
  if (!socket.writable) {
    socket.destroy();
    return;
  }
  socket.end(rawErrorResponse(405, 'method_not_allowed', 'CONNECT is not allowed: this is not a proxy'), () =>
    socket.destroy(),
  );
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
    const feature = unimplementedSvixFeature(path);
    if (feature !== null) {
      return sendError(
        new ApiError(
          501,
          'not_implemented',
          `Courier does not implement ${feature}: ${request.method} ${path}`,
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
