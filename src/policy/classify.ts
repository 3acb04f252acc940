/**
 * Turns the outcome of one attempt into success / retry / permanent. When in doubt we retry:
 * one extra attempt is cheap, dropping a real event is not.
 */
import { STATUS_CODES } from 'node:http';
import type { Classification, ClassifierPolicy, NetworkFailureKind, Outcome, Verdict } from './types.ts';

const NETWORK_REASONS: Readonly<Record<NetworkFailureKind, string>> = {
  timeout: 'request timed out: the receiver did not answer within the deadline',
  connect_timeout: 'connect timed out: the receiver could not be reached in time',
  connection_refused: 'connection refused: the receiver is not listening',
  connection_reset: 'connection reset: the receiver dropped the connection mid-request',
  dns: 'DNS lookup failed: the host name did not resolve',
  tls: 'TLS handshake failed: the receiver’s certificate or TLS setup was rejected',
  other: 'network error: the request failed before a response arrived',
};

/** The document's permanent class: resending the same request cannot succeed until someone acts. */
const PERMANENT_REASONS: Readonly<Record<number, string>> = {
  400: 'the receiver rejected the payload as malformed and the same payload will fail again',
  401: 'the receiver rejected our authentication; the endpoint secret or configuration needs fixing',
  403: 'the receiver rejected our authentication; the endpoint secret or configuration needs fixing',
  410: 'the endpoint no longer exists',
  422: 'the receiver could not process the payload and the same payload will fail again',
};

/** The statuses strict mode does not retry, in order. */
export const PERMANENT_STATUSES: readonly number[] = Object.keys(PERMANENT_REASONS).map(Number);

const OVERRIDE_TAILS: Readonly<Record<Verdict, string>> = {
  success: 'counted as delivered',
  retry: 'will retry',
  permanent: 'not retried',
};

export function classify(outcome: Outcome, policy: ClassifierPolicy): Classification {
  switch (outcome.kind) {
    case 'network': {
      const detail = outcome.message ? ` (${outcome.message})` : '';
      return verdict('retry', `${NETWORK_REASONS[outcome.failure]}${detail}; will retry`, false);
    }
    case 'refused':
      // The SSRF guard: waiting will not change where the URL points.
      return verdict('permanent', `refused to send: ${outcome.reason}; not retried`, true);
    case 'response':
      return classifyStatus(outcome.status, policy);
  }
}

function classifyStatus(status: number, policy: ClassifierPolicy): Classification {
  if (!Number.isInteger(status) || status < 100 || status > 599) {
    return verdict('retry', `HTTP status ${status} is not a valid status code (100–599); will retry`, false);
  }
  const byMode = classifyValidStatus(status, policy.mode === 'lenient');
  const override = policy.overrides?.[status];
  if (override === undefined) return byMode;
  // A status forced to retry keeps its streak effect (a 404 or a lenient 410 still counts).
  const counts = override === 'permanent' || (override === 'retry' && byMode.countsTowardStreak);
  const reason = `${label(status)}: the policy overrides this status; ${OVERRIDE_TAILS[override]}`;
  return verdict(override, reason, counts);
}

function classifyValidStatus(status: number, lenient: boolean): Classification {
  const name = label(status);
  if (status >= 200 && status < 300) return verdict('success', `${name}: delivered`, false);
  const permanent = PERMANENT_REASONS[status];
  if (permanent !== undefined) {
    return lenient
      ? verdict(
          'retry',
          `${name}: ${permanent}, but lenient mode retries every 4xx; ` +
            `will retry, counting toward the endpoint's failure streak`,
          true,
        )
      : verdict('permanent', `${name}: ${permanent}; not retried`, true);
  }
  if (status === 404) {
    return verdict(
      'retry',
      `${name}: ambiguous (a misconfigured URL may be fixed, a dead endpoint will not): ` +
        `retried conservatively, counts toward the endpoint's failure streak`,
      true,
    );
  }
  if (status === 301 || status === 308) {
    // Moved for good: the same URL will keep answering so until the endpoint's URL is changed.
    return verdict(
      'retry',
      `${name}: the endpoint has moved for good and redirects are never followed; the endpoint's ` +
        `URL needs changing: retried conservatively, counts toward the endpoint's failure streak`,
      true,
    );
  }
  return verdict('retry', `${name}: ${retryExplanation(status)}`, false);
}

function retryExplanation(status: number): string {
  if (status === 408) return 'the receiver timed out waiting for the request; will retry';
  if (status === 429) return 'the receiver is rate limiting us; will retry';
  if (status >= 500) return 'the receiver had a server error; will retry';
  if (status >= 300 && status < 400) {
    return 'redirects are never followed, so a redirect is a failed attempt; will retry';
  }
  return 'an unexpected status; when in doubt, we retry';
}

function label(status: number): string {
  const phrase = STATUS_CODES[status];
  return phrase === undefined ? `HTTP ${status}` : `HTTP ${status} ${phrase}`;
}

function verdict(v: Verdict, reason: string, countsTowardStreak: boolean): Classification {
  return { verdict: v, reason, countsTowardStreak };
}
