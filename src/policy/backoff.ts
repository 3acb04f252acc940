/**
 * How long to wait before the next attempt. Exponential so short outages recover quickly and
 * long ones are not flooded; jittered so deliveries that failed together do not return together.
 */
import type { Random } from '../random.ts';
import type { BackoffPolicy, JitterMode } from './types.ts';

// 2^1023 is the largest finite power of two; past it base·2^k would be Infinity (or NaN for base 0).
const MAX_DOUBLINGS = 1023;

/**
 * The un-jittered wait after `retryNumber` attempts (≥ 1), i.e. before attempt retryNumber + 1.
 * Exponential: min(cap, base·2^(n−1)). Schedule: the n-th entry, the last one repeating.
 */
export function nominalDelay(retryNumber: number, policy: BackoffPolicy): number {
  if (!Number.isInteger(retryNumber) || retryNumber < 1) {
    throw new RangeError(`retryNumber must be an integer ≥ 1, got ${retryNumber}`);
  }
  if (policy.kind === 'schedule') {
    return policy.scheduleMs[Math.min(retryNumber, policy.scheduleMs.length) - 1]!;
  }
  return Math.min(policy.capMs, policy.baseMs * 2 ** Math.min(retryNumber - 1, MAX_DOUBLINGS));
}

/**
 * Spreads a nominal delay d over whole milliseconds: 'equal' in [⌈d/2⌉, d] (keeps ~3/4 of d on
 * average, never less than half), 'full' in [0, d] (1/2 on average), 'none' exactly d.
 */
export function applyJitter(nominalMs: number, jitter: JitterMode, random: Random): number {
  if (jitter === 'none') return nominalMs;
  const low = jitter === 'equal' ? Math.ceil(nominalMs / 2) : 0;
  // min(): for delays near 2^53, random() just below 1 times the span can round up to the span.
  return Math.min(nominalMs, low + Math.floor(random() * (nominalMs - low + 1)));
}

/** The jittered wait after `retryNumber` attempts: what the scheduler actually uses. */
export function backoffDelay(retryNumber: number, policy: BackoffPolicy, random: Random): number {
  return applyJitter(nominalDelay(retryNumber, policy), policy.jitter, random);
}
