/**
 * decide(): the one place retry rules are applied. The worker reports what happened and does
 * exactly what comes back; it has no retry logic of its own.
 */
import { applyJitter, nominalDelay } from './backoff.ts';
import { classify } from './classify.ts';
import { formatDuration } from './duration.ts';
import { exhausted } from './give-up.ts';
import { retryAfterFromHeaders } from './retry-after.ts';
import type { Decision, DecisionInput, JitterMode } from './types.ts';

interface Wait {
  readonly delayMs: number;
  readonly reason: 'backoff' | 'retry_after';
  /** The honoured Retry-After (0 without one): no retry may come sooner, even clamped. */
  readonly floorMs: number;
  /** Why this long, for the detail sentence. */
  readonly why: string;
  /** The un-jittered backoff. */
  readonly nominalMs: number;
}

const JITTER_LABELS: Readonly<Record<JitterMode, string>> = {
  equal: 'equal jitter',
  full: 'full jitter',
  none: 'no jitter',
};

export function decide(input: DecisionInput): Decision {
  assertInstants(input);
  const { outcome, attempts, giveUpAt, policy, now } = input;
  const classification = classify(outcome, policy.classifier);
  if (classification.verdict === 'success') return { kind: 'delivered', classification };
  if (classification.verdict === 'permanent') {
    return { kind: 'failed', detail: classification.reason, classification };
  }
  const asked = askedWait(input);
  // The receiver's wait is about the receiver, not this delivery: its other deliveries wait too,
  // also when this one waits longer for its backoff or gives up.
  const hold = asked && asked.honouredMs > 0 ? { holdEndpointUntil: now + asked.honouredMs } : {};
  const spent = exhausted(attempts, giveUpAt, now, policy.giveUp);
  if (spent !== undefined) return { kind: 'expired', ...spent, classification, ...hold };

  const { delayMs, reason, why, floorMs, nominalMs } = chooseWait(input, asked);
  const next = `attempt ${attempts + 1} of ${policy.giveUp.maxAttempts}`;
  if (now + delayMs <= giveUpAt) {
    const detail = `${next} in ${roughly(delayMs)} (${why})`;
    return { kind: 'retry', at: now + delayMs, delayMs, reason, detail, classification, ...hold };
  }
  if (reason === 'retry_after' || giveUpAt - now < floorMs) {
    // The receiver told us not to come back before then; retrying earlier would undercut it
    // (also when the backoff was longer and only the clamp to the deadline would bring it under).
    const detail =
      `Retry-After ${roughly(floorMs)} reaches past the give-up time (${roughly(giveUpAt - now)} left); ` +
      'giving up rather than returning before the receiver allows';
    return { kind: 'expired', reason: 'deadline', detail, classification, ...hold };
  }
  // exhausted() already ruled out giveUpAt <= now, so one last attempt fits at the deadline, unless
  // so little time is left that it would come sooner than equal jitter ever allows: a near-instant
  // second request to a failing receiver is what backoff is there to prevent.
  const lastDelay = giveUpAt - now;
  const shortest = Math.ceil(nominalMs / 2);
  if (lastDelay < shortest) {
    const detail =
      `only ${roughly(lastDelay)} left before the give-up time, less than half the ` +
      `${formatDuration(nominalMs)} backoff; giving up rather than retrying at once`;
    return { kind: 'expired', reason: 'deadline', detail, classification, ...hold };
  }
  const detail = `${next} in ${roughly(lastDelay)} (${why}; clamped to the give-up time: last attempt)`;
  return {
    kind: 'retry',
    at: giveUpAt,
    delayMs: lastDelay,
    reason: 'backoff',
    detail,
    classification,
    ...hold,
  };
}

/** A Retry-After the outcome carries on one of policy.retryAfter.statuses: asked, and as honoured (to the ceiling). */
interface AskedWait {
  readonly askedMs: number;
  readonly honouredMs: number;
}

function askedWait({ outcome, policy, now }: DecisionInput): AskedWait | undefined {
  // A 429 or 503 whose body was then cut off still asked for its wait.
  const answer =
    outcome.kind === 'response' ? outcome : outcome.kind === 'network' ? outcome.answered : undefined;
  if (!answer || !policy.retryAfter.statuses.includes(answer.status)) return undefined;
  const askedMs = retryAfterFromHeaders(answer.headers, now);
  return askedMs === undefined
    ? undefined
    : { askedMs, honouredMs: Math.min(askedMs, policy.retryAfter.ceilingMs) };
}

/** The jittered backoff, unless an honoured Retry-After asks for longer. */
function chooseWait({ attempts, policy, now, giveUpAt, random }: DecisionInput, asked?: AskedWait): Wait {
  const nominal = nominalDelay(attempts, policy.backoff);
  const backoff = applyJitter(nominal, policy.backoff.jitter, random);
  const backoffWhy = `backoff ${formatDuration(nominal)}, ${JITTER_LABELS[policy.backoff.jitter]}`;
  if (asked === undefined) {
    return { delayMs: backoff, reason: 'backoff', why: backoffWhy, floorMs: 0, nominalMs: nominal };
  }

  const { ceilingMs } = policy.retryAfter;
  const { askedMs, honouredMs: honoured } = asked;
  const clamp = askedMs > ceilingMs ? ` (clamped to the ${formatDuration(ceilingMs)} ceiling)` : '';
  const stated = `Retry-After ${roughly(askedMs)}${clamp}`;
  if (honoured > backoff) {
    // Jittered too, only ever later (up to a tenth more, within the ceiling and the give-up time):
    // deliveries a receiver turned away with one Retry-After, an HTTP-date say, would all come back
    // at once.
    const room = Math.max(0, Math.min(ceilingMs, giveUpAt - now) - honoured);
    const extra =
      policy.backoff.jitter === 'none' ? 0 : Math.min(Math.floor(random() * (honoured / 10 + 1)), room);
    const why = `${stated} honoured, longer than backoff ${roughly(backoff)}${extra > 0 ? ', plus jitter' : ''}`;
    return { delayMs: honoured + extra, reason: 'retry_after', why, floorMs: honoured, nominalMs: nominal };
  }
  return {
    delayMs: backoff,
    reason: 'backoff',
    why: `${backoffWhy}; ${stated} is not longer`,
    floorMs: honoured,
    nominalMs: nominal,
  };
}

/** Jittered delays are odd milliseconds; to the second is what a person reading the log wants. */
function roughly(ms: number): string {
  return formatDuration(ms < 1000 ? ms : Math.round(ms / 1000) * 1000);
}

function assertInstants({ attempts, now, giveUpAt }: DecisionInput): void {
  if (!Number.isSafeInteger(attempts) || attempts < 1) {
    throw new RangeError(`attempts must be an integer ≥ 1 (this attempt included), got ${attempts}`);
  }
  if (!Number.isSafeInteger(now) || !Number.isSafeInteger(giveUpAt)) {
    throw new RangeError(`now and giveUpAt must be whole-millisecond instants, got ${now} and ${giveUpAt}`);
  }
}
