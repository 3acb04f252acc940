/** Checking a received webhook: verify() for receivers, examine() for saying why one fails. */
import { timingSafeEqual } from 'node:crypto';
import { systemClock } from '../clock.ts';
import { parseSecret } from './secrets.ts';
import { digest, type SigningKey, signedPrefix, type WebhookBody } from './standard-webhooks.ts';

export type VerificationErrorCode =
  | 'MISSING_HEADERS'
  | 'INVALID_TIMESTAMP'
  | 'TIMESTAMP_TOO_OLD'
  | 'TIMESTAMP_TOO_NEW'
  | 'NO_MATCHING_SIGNATURE';

export class WebhookVerificationError extends Error {
  override readonly name = 'WebhookVerificationError';

  constructor(
    readonly code: VerificationErrorCode,
    message: string,
  ) {
    super(message);
  }
}

/** Anything with a case-insensitive `get`, such as the fetch API's Headers. */
export interface HeadersLike {
  get(name: string): string | null | undefined;
}

/** Plain header objects such as Node's IncomingHttpHeaders; names are matched case-insensitively. */
export type HeaderRecord = Readonly<Record<string, string | readonly string[] | undefined>>;

export type VerifySecrets = string | SigningKey | readonly (string | SigningKey)[];

export interface VerifyOptions {
  /** Current time in milliseconds since the epoch. */
  now?: () => number;
  /** Allowed clock skew in either direction, in seconds. */
  toleranceSec?: number;
}

export const DEFAULT_TOLERANCE_SEC = 5 * 60;
// Digits only: parseInt would accept "123abc"; 15 digits stay within safe integers.
const TIMESTAMP = /^[0-9]{1,15}$/;

/** Everything verify() looks at, each check made even when an earlier one fails. */
export interface Examination {
  /** The check verify() fails on (the first in its order); absent when the webhook verifies. */
  problem?: { code: VerificationErrorCode; message: string };
  /** The headers as received, from their webhook-* names or else their svix-* ones. */
  msgId?: string;
  timestamp?: string;
  /** The clock's time minus the timestamp, in seconds (negative: from the future); when it is a Unix time. */
  ageSec?: number;
  toleranceSec: number;
  /** The signature header's `v1,` entries, and entries of other versions (which are skipped). */
  v1Signatures: number;
  otherSignatures: number;
  /** The secret and the `v1,` entry that matched (0-based); absent when none did or none could be checked. */
  match?: { secret: number; signature: number };
}

/**
 * Verifies a received webhook, for receivers written in TypeScript. Returns normally when one
 * `v1` signature matches one of the secrets; throws WebhookVerificationError otherwise.
 * Pass the raw body bytes: a re-serialized JSON body will not match.
 */
export function verify(
  body: WebhookBody,
  headers: HeadersLike | HeaderRecord,
  secrets: VerifySecrets,
  options: VerifyOptions = {},
): void {
  const { problem } = inspect(body, headers, secrets, options, false);
  if (problem) throw new WebhookVerificationError(problem.code, problem.message);
}

/**
 * verify()'s checks as a report: which headers came, how old the timestamp is, which secret
 * signed. Unlike verify(), it checks the signatures even when the timestamp fails.
 */
export function examine(
  body: WebhookBody,
  headers: HeadersLike | HeaderRecord,
  secrets: VerifySecrets,
  options: VerifyOptions = {},
): Examination {
  return inspect(body, headers, secrets, options, true);
}

function inspect(
  body: WebhookBody,
  headers: HeadersLike | HeaderRecord,
  secrets: VerifySecrets,
  options: VerifyOptions,
  thorough: boolean,
): Examination {
  const keys = toKeys(secrets);
  const get = headerReader(headers);
  // webhook-* first, svix-* as the svix libraries also send and accept them.
  const msgId = get('webhook-id') || get('svix-id');
  const timestamp = get('webhook-timestamp') || get('svix-timestamp');
  const signatureHeader = get('webhook-signature') || get('svix-signature');
  // Space-separated; a ", " as HTTP joins a repeated header (Node's req.headers, fetch) too.
  const signatures = (signatureHeader ?? '').split(/,?\s+/).filter(Boolean);
  const received = signatures.filter((entry) => entry.startsWith('v1,'));
  const toleranceSec = options.toleranceSec ?? DEFAULT_TOLERANCE_SEC;
  const found: Examination = {
    msgId,
    timestamp,
    toleranceSec,
    v1Signatures: received.length,
    otherSignatures: signatures.length - received.length,
  };
  const timestampSec = timestamp !== undefined && TIMESTAMP.test(timestamp) ? Number(timestamp) : undefined;
  if (timestampSec !== undefined) {
    found.ageSec = Math.floor((options.now ?? systemClock.now)() / 1000) - timestampSec;
  }
  // verify() spends no HMAC on a webhook its timestamp already refuses (a replay, most likely).
  const inTime = found.ageSec !== undefined && Math.abs(found.ageSec) <= toleranceSec;
  if (msgId && timestampSec !== undefined && received.length > 0 && (thorough || inTime)) {
    found.match = matching(body, keys, signedPrefix(msgId, timestampSec), received);
  }
  found.problem = problemOf(found, Boolean(signatureHeader));
  return found;
}

function problemOf(found: Examination, signed: boolean): Examination['problem'] {
  if (!found.msgId || !found.timestamp || !signed) {
    return {
      code: 'MISSING_HEADERS',
      message: 'missing webhook-id, webhook-timestamp or webhook-signature',
    };
  }
  if (found.ageSec === undefined) {
    return { code: 'INVALID_TIMESTAMP', message: 'webhook-timestamp is not a Unix time in seconds' };
  }
  if (found.ageSec > found.toleranceSec) {
    return { code: 'TIMESTAMP_TOO_OLD', message: 'webhook-timestamp is too old' };
  }
  if (-found.ageSec > found.toleranceSec) {
    return { code: 'TIMESTAMP_TOO_NEW', message: 'webhook-timestamp is too far in the future' };
  }
  if (!found.match) return { code: 'NO_MATCHING_SIGNATURE', message: 'no matching signature found' };
  return undefined;
}

function matching(
  body: WebhookBody,
  keys: readonly SigningKey[],
  prefix: string,
  received: readonly string[],
): Examination['match'] {
  const candidates = received.map((entry) => Buffer.from(entry.slice(3)));
  const prefixBytes = Buffer.from(prefix);
  for (const [secret, key] of keys.entries()) {
    const expected = Buffer.from(digest(key, prefixBytes, body));
    for (const [signature, candidate] of candidates.entries()) {
      if (candidate.length === expected.length && timingSafeEqual(candidate, expected)) {
        return { secret, signature };
      }
    }
  }
  return undefined;
}

function toKeys(secrets: VerifySecrets): SigningKey[] {
  const list = Array.isArray(secrets)
    ? (secrets as readonly (string | SigningKey)[])
    : [secrets as string | SigningKey];
  if (list.length === 0) throw new RangeError('verification needs at least one secret');
  return list.map((secret) => (typeof secret === 'string' ? parseSecret(secret) : secret));
}

function headerReader(headers: HeadersLike | HeaderRecord): (name: string) => string | undefined {
  if (isHeadersLike(headers)) return (name) => headers.get(name) ?? undefined;
  const lowered = new Map<string, string>();
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined) continue;
    // Repeated headers are joined with the separator the signature header already uses.
    lowered.set(name.toLowerCase(), typeof value === 'string' ? value : value.join(' '));
  }
  return (name) => lowered.get(name);
}

function isHeadersLike(headers: HeadersLike | HeaderRecord): headers is HeadersLike {
  return typeof (headers as Partial<HeadersLike>).get === 'function';
}
