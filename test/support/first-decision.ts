import { decide } from '../../src/policy/decide.ts';
import { DEFAULT_POLICY } from '../../src/policy/defaults.ts';
import type { Decision, Outcome } from '../../src/policy/types.ts';

/** What the default policy decides after a first attempt with this outcome, at instant 0, no jitter drawn. */
export function firstDecision(outcome: Outcome): Decision {
  return decide({
    outcome,
    attempts: 1,
    giveUpAt: 10 * 86_400_000,
    policy: DEFAULT_POLICY,
    now: 0,
    random: () => 0,
  });
}
