import { fieldError } from './errors.ts';

/**
 * A request's [since, until) as epoch ms; an empty range is a mistake (the two swapped, most
 * likely), not a question.
 */
export function sentRange(body: { since: string; until: string }): { since: number; until: number };
export function sentRange(body: { since: string; until?: string | null }): { since: number; until?: number };
export function sentRange(body: { since: string; until?: string | null }): { since: number; until?: number } {
  const since = Date.parse(body.since);
  const until = body.until == null ? undefined : Date.parse(body.until);
  if (until !== undefined && until <= since) throw fieldError(['body', 'until'], 'must be after since');
  return { since, until };
}
