/** `courier endpoints policy`: the retry policy an endpoint's deliveries follow, in words. */
import type { Static } from 'typebox';
import type { EndpointRetryPolicyOut } from '../api/schemas/policy.ts';
import { formatDuration, PERMANENT_STATUSES } from '../policy/index.ts';
import { fieldLines, overridesGiven } from './format.ts';

/** The API's EndpointRetryPolicy (a Courier extension). */
export type EndpointPolicyOut = Static<typeof EndpointRetryPolicyOut>;

const permanent = PERMANENT_STATUSES.join(', ').replace(/, (\d+)$/, ' and $1');

const MODES = {
  strict: `${permanent} fail at once; other failed answers and network errors are retried`,
  lenient: 'every failed answer and network error is retried, 4xx too',
};

/** One `label  text` line per part of the policy, then the overrides that made it. */
export function policyLines(out: EndpointPolicyOut): string[] {
  const { classifier, backoff, retryAfter, giveUp } = out.policy;
  const verdicts = Object.entries(classifier.overrides).map(([status, verdict]) => `${status} ${verdict}`);
  const jitter = backoff.jitter === 'none' ? 'no jitter' : `${backoff.jitter} jitter`;
  const delays =
    backoff.kind === 'schedule'
      ? `the schedule ${backoff.scheduleMs!.map(formatDuration).join(', ')} (its last delay repeats)`
      : `${formatDuration(backoff.baseMs!)} doubling to ${formatDuration(backoff.capMs!)}`;
  return fieldLines([
    [
      'classify',
      `${classifier.mode}: ${MODES[classifier.mode]}${verdicts.length ? `; by status: ${verdicts.join(', ')}` : ''}`,
    ],
    ['backoff', `${delays}, ${jitter}`],
    [
      'retry-after',
      retryAfter.statuses.length === 0
        ? 'never honoured'
        : `honoured on ${retryAfter.statuses.join(', ')}, up to ${formatDuration(retryAfter.ceilingMs)}`,
    ],
    [
      'give up',
      `after ${giveUp.maxAttempts} attempt${giveUp.maxAttempts === 1 ? '' : 's'} or ${formatDuration(giveUp.windowMs)} after the first`,
    ],
    ['overrides', overridesText(out)],
  ]);
}

function overridesText({ application, endpoint }: EndpointPolicyOut): string {
  if (!overridesGiven(application) && !overridesGiven(endpoint)) {
    return "none: the installation's policy (COURIER_RETRY_*)";
  }
  const layer = (name: string, overrides: object | null) =>
    `${name} ${overridesGiven(overrides) ? JSON.stringify(overrides) : 'none'}`;
  return `${layer('application', application)}; ${layer('endpoint', endpoint)}`;
}
