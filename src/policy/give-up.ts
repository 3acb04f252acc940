/**
 * When to stop. Two limits, whichever comes first: max attempts caps the work spent on one
 * delivery (a receiver failing in 10 ms cannot burn thousands of attempts), the time window caps
 * how stale an event may be when it finally arrives.
 */
import { formatDuration } from './duration.ts';
import type { GiveUpPolicy } from './types.ts';

export interface Exhaustion {
  readonly reason: 'max_attempts' | 'deadline';
  readonly detail: string;
}

/** The give-up instant, fixed once at the first attempt. */
export function giveUpAt(firstAttemptAt: number, policy: GiveUpPolicy): number {
  return firstAttemptAt + policy.windowMs;
}

/** Why a delivery may not be retried any more, or undefined while it still may. */
export function exhausted(
  attempts: number,
  giveUpAtMs: number,
  now: number,
  policy: GiveUpPolicy,
): Exhaustion | undefined {
  if (attempts >= policy.maxAttempts) {
    return {
      reason: 'max_attempts',
      detail: `gave up after ${attempts} attempts (the policy allows ${policy.maxAttempts})`,
    };
  }
  if (now >= giveUpAtMs) {
    const ago = now > giveUpAtMs ? ` (it closed ${formatDuration(now - giveUpAtMs)} ago)` : '';
    return { reason: 'deadline', detail: `gave up: the retry window is over${ago}` };
  }
  return undefined;
}
