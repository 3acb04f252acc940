/**
 * Maps what undici, net, tls and dns throw to the retry policy's vocabulary. Codes are the stable
 * part of those errors (undici 7: lib/core/errors.js; Node: errno and ERR_* codes), so match on them.
 */
import type { NetworkFailureKind, Outcome } from '../policy/types.ts';
import { SSRF_REFUSED } from './ssrf-guard.ts';

/** Thrown into undici by the Sender when the total request deadline passes. */
export class DeadlineError extends Error {
  readonly code = 'ERR_COURIER_DEADLINE';
  constructor(ms: number) {
    super(`no complete response within ${ms} ms`);
    this.name = 'DeadlineError';
  }
}

const KIND_BY_CODE: ReadonlyMap<string, NetworkFailureKind> = new Map<string, NetworkFailureKind>([
  ['ERR_COURIER_DEADLINE', 'timeout'],
  ['UND_ERR_HEADERS_TIMEOUT', 'timeout'],
  ['UND_ERR_BODY_TIMEOUT', 'timeout'],
  ['UND_ERR_ABORTED', 'timeout'], // the Sender only aborts at the deadline (or once it has enough body)
  ['UND_ERR_ABORT', 'timeout'],
  ['ABORT_ERR', 'timeout'],
  ['UND_ERR_CONNECT_TIMEOUT', 'connect_timeout'],
  ['ETIMEDOUT', 'connect_timeout'],
  ['ECONNREFUSED', 'connection_refused'],
  ['ECONNRESET', 'connection_reset'],
  ['ECONNABORTED', 'connection_reset'],
  ['EPIPE', 'connection_reset'],
  ['UND_ERR_SOCKET', 'connection_reset'], // "other side closed" and friends
  ['ERR_STREAM_PREMATURE_CLOSE', 'connection_reset'],
  ['UND_ERR_RES_CONTENT_LENGTH_MISMATCH', 'connection_reset'], // closed before the promised length
  ['ENOTFOUND', 'dns'],
  ['EAI_AGAIN', 'dns'],
  ['EAI_FAIL', 'dns'],
  ['EAI_NODATA', 'dns'],
  ['EAI_NONAME', 'dns'],
  ['ESERVFAIL', 'dns'],
  ['ENODATA', 'dns'],
  ['EPROTO', 'tls'], // handshake failures ("wrong version number", alert received)
  ['HOSTNAME_MISMATCH', 'tls'],
  ['INVALID_CA', 'tls'],
  ['PATH_LENGTH_EXCEEDED', 'tls'],
  ['UND_ERR_PRX_TLS', 'tls'],
]);

interface CodedError {
  code?: unknown;
  message?: unknown;
  errors?: unknown;
}

/**
 * The error that carries the telling code. Node's happy-eyeballs connect fails with an
 * AggregateError, whose first attempt is the one to read.
 */
function carrier(err: unknown): { code: string; message: string } | undefined {
  if (typeof err !== 'object' || err === null) return undefined;
  const { code, message, errors } = err as CodedError;
  if (typeof code === 'string') return { code, message: String(message) };
  return Array.isArray(errors) && errors.length > 0 ? carrier(errors[0]) : undefined;
}

export function networkFailureKind(err: unknown): NetworkFailureKind {
  const code = carrier(err)?.code;
  // DOMException AbortError (code 20, a number): the Sender only aborts at the deadline.
  if (code === undefined) return (err as Error | undefined)?.name === 'AbortError' ? 'timeout' : 'other';
  const known = KIND_BY_CODE.get(code);
  if (known) return known;
  // OpenSSL verification results surface as bare codes: CERT_HAS_EXPIRED, UNABLE_TO_GET_ISSUER_CERT, ...
  if (/^(ERR_TLS_|ERR_SSL_|UNABLE_TO_)|CERT|SELF_SIGNED/.test(code)) return 'tls';
  return 'other';
}

export function errorMessage(err: unknown): string {
  const message = err instanceof Error ? err.message : String(err);
  const code = carrier(err)?.code;
  return code && !message.includes(code) ? `${code}: ${message}` : message;
}

/** The outcome for an attempt that failed without a usable response. */
export function outcomeForError(err: unknown): Outcome {
  const coded = carrier(err);
  if (coded?.code === SSRF_REFUSED) return { kind: 'refused', reason: coded.message };
  return { kind: 'network', failure: networkFailureKind(err), message: errorMessage(err) };
}

/**
 * This machine out of a resource (file descriptors, buffers, memory): the worker's own failure,
 * not the receiver's, so the Sender throws it and the delivery is given back uncounted. Not
 * EADDRNOTAVAIL: besides running out of local ports, it is what connecting to an IPv6 address
 * gives on a host without IPv6, a matter of the receiver's URL that must count and end.
 */
const LOCAL_FAILURES = new Set(['EMFILE', 'ENFILE', 'ENOBUFS', 'ENOMEM']);

export function isLocalFailure(err: unknown): boolean {
  return LOCAL_FAILURES.has(carrier(err)?.code as string);
}

/** Errors that mean the Sender was misused (bad headers, used after close): these are thrown, not mapped. */
export function isProgrammerError(err: unknown): boolean {
  const code = carrier(err)?.code;
  return code === 'UND_ERR_INVALID_ARG' || code === 'UND_ERR_CLOSED' || code === 'UND_ERR_DESTROYED';
}
