/**
 * The endpoint's permanent-failure streak: a receiver that answers 410 for a week after two good
 * days is telling us the URL is dead. The engine keeps the counter; this says how it moves.
 */
import type { Classification } from './types.ts';

export type StreakEffect = 'reset' | 'increment' | 'unchanged';

/** Success resets the streak; permanent-class outcomes (and 404) extend it; others leave it alone. */
export function streakEffect(classification: Classification): StreakEffect {
  if (classification.verdict === 'success') return 'reset';
  return classification.countsTowardStreak ? 'increment' : 'unchanged';
}
