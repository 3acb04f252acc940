/** `courier endpoints policy`: the retry policy an endpoint's deliveries follow, in words. */
import { formatDuration } from '../policy/duration.ts';

/** The API's EndpointRetryPolicy (a Courier extension). */
export interface EndpointPolicyOut {
  policy: {
    classifier: { mode: 'strict' | 'lenient'; overrides: Record<string, string> };
    backoff: {
      kind: 'exponential' | 'schedule';
      baseMs?: number;
      capMs?: number;
      scheduleMs?: number[];
      jitter: string;
    };
    retryAfter: { statuses: number[]; ceilingMs: number };
    giveUp: { maxAttempts: number; windowMs: number };
  };
  application: Record<string, unknown> | null;
  endpoint: Record<string, unknown> | null;
}

const MODES = {
  strict: '400, 401, 403, 410 and 422 fail at once; every other failure is retried',
  lenient: 'every failure is retried, 4xx too',
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
  const lines: [string, string][] = [
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
    ['give up', `after ${giveUp.maxAttempts} attempts or ${formatDuration(giveUp.windowMs)} after the first`],
    ['overrides', overridesText(out)],
  ];
  return lines.map(([label, text]) => `${label.padEnd(12)}${text}`);
}

function overridesText({ application, endpoint }: EndpointPolicyOut): string {
  if (!application && !endpoint) return "none: the installation's policy (COURIER_RETRY_*)";
  const layer = (name: string, overrides: Record<string, unknown> | null) =>
    `${name} ${overrides ? JSON.stringify(overrides) : 'none'}`;
  return `${layer('application', application)}; ${layer('endpoint', endpoint)}`;
}
