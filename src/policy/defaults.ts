/**
 * The default policy (the document's numbers) and building a policy from partial overrides.
 * Every policy that leaves here has been validated, so the pure functions can trust it.
 */
import type {
  BackoffPolicy,
  ClassifierPolicy,
  GiveUpPolicy,
  JitterMode,
  RetryAfterPolicy,
  RetryPolicy,
  Verdict,
} from './types.ts';

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DEFAULT_BACKOFF = { kind: 'exponential', baseMs: MINUTE, capMs: HOUR, jitter: 'equal' } as const;

export const DEFAULT_POLICY: RetryPolicy = deepFreeze({
  classifier: { mode: 'strict' },
  // Waits 1m, 2m, 4m … 32m, then 1h forever; equal jitter keeps 3/4 of that on average.
  backoff: { ...DEFAULT_BACKOFF },
  // 429 says so by definition, 503 often does; a day is the most we let a receiver park us.
  retryAfter: { statuses: [429, 503], ceilingMs: 24 * HOUR },
  // 16 attempts take 5–10h of backoff, so max attempts usually ends a delivery well before 72h.
  giveUp: { maxAttempts: 16, windowMs: 72 * HOUR },
});

/** Backoff overrides name fields of either kind; `scheduleMs` alone implies kind 'schedule'. */
export interface BackoffOverrides {
  readonly kind?: BackoffPolicy['kind'];
  readonly baseMs?: number;
  readonly capMs?: number;
  readonly scheduleMs?: readonly number[];
  readonly jitter?: JitterMode;
}

export interface PolicyOverrides {
  readonly classifier?: Partial<ClassifierPolicy>;
  readonly backoff?: BackoffOverrides;
  readonly retryAfter?: Partial<RetryAfterPolicy>;
  readonly giveUp?: Partial<GiveUpPolicy>;
}

/** DEFAULT_POLICY with `overrides` applied per field, validated. */
export function definePolicy(overrides: PolicyOverrides = {}): RetryPolicy {
  return validatePolicy({
    classifier: { ...DEFAULT_POLICY.classifier, ...overrides.classifier },
    backoff: mergeBackoff(overrides.backoff ?? {}),
    retryAfter: { ...DEFAULT_POLICY.retryAfter, ...overrides.retryAfter },
    giveUp: { ...DEFAULT_POLICY.giveUp, ...overrides.giveUp },
  });
}

function mergeBackoff(o: BackoffOverrides): BackoffPolicy {
  const kind = o.kind ?? (o.scheduleMs === undefined ? 'exponential' : 'schedule');
  const jitter = o.jitter ?? DEFAULT_BACKOFF.jitter;
  // Fields of the other kind would be silently ignored; a config mistake like that must be loud.
  const foreign = kind === 'schedule' ? (['baseMs', 'capMs'] as const) : (['scheduleMs'] as const);
  for (const field of foreign) {
    if (o[field] !== undefined) throw new TypeError(`backoff.${field} does not apply to ${kind} backoff`);
  }
  if (kind === 'schedule') return { kind, scheduleMs: o.scheduleMs ?? [], jitter };
  return {
    kind,
    baseMs: o.baseMs ?? DEFAULT_BACKOFF.baseMs,
    capMs: o.capMs ?? DEFAULT_BACKOFF.capMs,
    jitter,
  };
}

/** Throws a RangeError or TypeError naming the offending field; returns the policy unchanged. */
export function validatePolicy(policy: RetryPolicy): RetryPolicy {
  validateClassifier(policy.classifier);
  validateBackoff(policy.backoff);
  validateRetryAfter(policy.retryAfter);
  validateGiveUp(policy.giveUp);
  return policy;
}

function validateClassifier(c: ClassifierPolicy): void {
  oneOf('classifier.mode', c.mode, ['strict', 'lenient']);
  for (const [status, verdict] of Object.entries(c.overrides ?? {})) {
    // The classifier looks statuses up by their plain spelling; '404.0' or ' 404' would never match.
    if (!/^\d+$/.test(status) || String(Number(status)) !== status) {
      throw new TypeError(
        `classifier.overrides keys must be statuses written as digits, e.g. '404', got ${show(status)}`,
      );
    }
    httpStatus(`classifier.overrides[${status}]`, Number(status));
    oneOf<Verdict>(`classifier.overrides[${status}]`, verdict, ['success', 'retry', 'permanent']);
  }
}

function validateBackoff(b: BackoffPolicy): void {
  oneOf('backoff.kind', b.kind, ['exponential', 'schedule']);
  oneOf('backoff.jitter', b.jitter, ['equal', 'full', 'none']);
  if (b.kind === 'schedule') {
    if (!Array.isArray(b.scheduleMs)) throw new TypeError('backoff.scheduleMs must be an array of delays');
    if (b.scheduleMs.length === 0) throw new RangeError('backoff.scheduleMs must list at least one delay');
    // A zero delay retries at once: the hot loop backoff exists to prevent (as a zero base would).
    for (const [i, ms] of b.scheduleMs.entries()) milliseconds(`backoff.scheduleMs[${i}]`, ms, 1);
    return;
  }
  milliseconds('backoff.baseMs', b.baseMs, 1);
  milliseconds('backoff.capMs', b.capMs, b.baseMs, ', not below backoff.baseMs');
}

function validateRetryAfter(r: RetryAfterPolicy): void {
  if (!Array.isArray(r.statuses)) {
    throw new TypeError('retryAfter.statuses must be an array of HTTP statuses');
  }
  for (const [i, status] of r.statuses.entries()) httpStatus(`retryAfter.statuses[${i}]`, status);
  milliseconds('retryAfter.ceilingMs', r.ceilingMs, 0);
}

function validateGiveUp(g: GiveUpPolicy): void {
  integer('giveUp.maxAttempts', g.maxAttempts, 1, Number.MAX_SAFE_INTEGER);
  milliseconds('giveUp.windowMs', g.windowMs, 0);
}

/**
 * The longest delay, window or ceiling a policy may name: 100 years. An instant computed from a
 * longer one (a retry's time, a give-up deadline) could fall outside what a Date or a timestamptz
 * holds, and a completion carrying it could never be written.
 */
const MAX_POLICY_MS = 100 * 365.25 * 24 * 60 * 60 * 1000;

function milliseconds(field: string, value: unknown, min: number, note = ''): void {
  integer(field, value, min, MAX_POLICY_MS, ` (milliseconds${note})`);
}

function httpStatus(field: string, value: unknown): void {
  integer(field, value, 100, 599, ' (an HTTP status)');
}

function integer(field: string, value: unknown, min: number, max: number, what = ''): void {
  if (typeof value !== 'number') throw new TypeError(`${field} must be a number${what}, got ${show(value)}`);
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new RangeError(`${field} must be an integer from ${min} to ${max}${what}, got ${show(value)}`);
  }
}

function oneOf<T extends string>(field: string, value: unknown, allowed: readonly T[]): void {
  if (!allowed.includes(value as T)) {
    throw new TypeError(`${field} must be one of ${allowed.map(show).join(', ')}, got ${show(value)}`);
  }
}

function show(value: unknown): string {
  return typeof value === 'string' ? `'${value}'` : String(value);
}

function deepFreeze<T extends object>(value: T): T {
  for (const child of Object.values(value)) {
    if (typeof child === 'object' && child !== null) deepFreeze(child);
  }
  return Object.freeze(value);
}
