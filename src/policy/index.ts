export { applyJitter, backoffDelay, nominalDelay } from './backoff.ts';
export { classify, PERMANENT_STATUSES } from './classify.ts';
export { decide } from './decide.ts';
export type { BackoffOverrides, PolicyOverrides } from './defaults.ts';
export { DEFAULT_POLICY, definePolicy, validatePolicy } from './defaults.ts';
export { formatDuration, parseDuration } from './duration.ts';
export { DEFAULT_DISABLE_FAILING_AFTER_MS, failingTooLong } from './failing.ts';
export type { Exhaustion } from './give-up.ts';
export { exhausted, giveUpAt } from './give-up.ts';
export {
  findHeader,
  parseRetryAfter,
  retryAfterFromHeaders,
} from './retry-after.ts';
export type { StreakEffect } from './streak.ts';
export { streakEffect } from './streak.ts';
export type * from './types.ts';
export { NETWORK_FAILURE_KINDS } from './types.ts';
