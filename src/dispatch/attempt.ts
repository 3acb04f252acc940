import { createSecretKey, type KeyObject } from 'node:crypto';
import type { Clock } from '../clock.ts';
import type { SendRequest, SendResult } from '../delivery/sender.ts';
import { newId } from '../ids.ts';
import { decide, giveUpAt, streakEffect } from '../policy/index.ts';
import type { Decision, RetryPolicy } from '../policy/types.ts';
import type { Random } from '../random.ts';
import { parseSecret, webhookHeaders } from '../signing/index.ts';
import type { ClaimedDelivery } from '../store/queries/claim.ts';
import type { Completion } from '../store/queries/complete.ts';

/** A claimed delivery with its slot taken and its request signed, ready to send. */
export interface Ready {
  delivery: ClaimedDelivery;
  policy: RetryPolicy;
  request: SendRequest;
}

export interface SenderLike {
  send(request: SendRequest): Promise<SendResult>;
}

/** Parsed signing secrets, cached: the same few secrets sign every attempt to an endpoint. */
const secretCache = new Map<string, KeyObject>();
function signingKey(key: string): KeyObject {
  let keyObject = secretCache.get(key);
  if (!keyObject) {
    keyObject = createSecretKey(parseSecret(key));
    if (secretCache.size > 10_000) secretCache.clear();
    secretCache.set(key, keyObject);
  }
  return keyObject;
}

/**
 * The request for one attempt: the stored bytes, the same webhook-id on every attempt, and a
 * fresh timestamp and signature (every active secret during a rotation) each time.
 */
export function buildRequest(delivery: ClaimedDelivery, now: number): SendRequest {
  const signed = webhookHeaders({
    msgId: delivery.messageId,
    timestampSec: Math.floor(now / 1000),
    body: delivery.payload,
    secrets: delivery.secrets.map(signingKey),
  });
  return {
    url: delivery.url,
    publicOnly: delivery.publicOnly,
    body: delivery.payload,
    headers: { ...delivery.headers, 'content-type': 'application/json', ...signed },
  };
}

function describeOutcome({ outcome, responseStatus }: SendResult): {
  statusCode: number | null;
  failureKind: string | null;
} {
  switch (outcome.kind) {
    case 'response':
      return { statusCode: outcome.status, failureKind: null };
    case 'network':
      // A status may have come before the failure (a body cut off or too slow): the log shows both.
      return { statusCode: responseStatus ?? null, failureKind: outcome.failure };
    case 'refused':
      return { statusCode: null, failureKind: 'refused' };
  }
}

const STATE_OF: Record<Decision['kind'], Completion['state']> = {
  delivered: 'delivered',
  retry: 'pending',
  failed: 'failed',
  expired: 'expired',
};

/** Turns a send result into the delivery's transition and attempt row; all retry logic is decide()'s. */
export function completionFor(
  delivery: ClaimedDelivery,
  result: SendResult,
  policy: RetryPolicy,
  clock: Clock,
  random: Random,
): Completion {
  const now = clock.now();
  const attempts = delivery.attempts + 1;
  const deadline = delivery.giveUpAt ?? giveUpAt(result.startedAt, policy.giveUp);
  const decision = decide({ outcome: result.outcome, attempts, giveUpAt: deadline, policy, now, random });
  const { statusCode, failureKind } = describeOutcome(result);
  const detail = decision.kind === 'delivered' ? decision.classification.reason : decision.detail;
  return {
    deliveryId: delivery.id,
    messageId: delivery.messageId,
    state: STATE_OF[decision.kind],
    attempts,
    nextAttemptAt: decision.kind === 'retry' ? decision.at : null,
    giveUpAt: deadline,
    lastError: decision.kind === 'delivered' ? null : decision.classification.reason,
    streak: streakEffect(decision.classification),
    ...('holdEndpointUntil' in decision && { holdEndpointUntil: decision.holdEndpointUntil }),
    attempt: {
      id: newId('atmpt', now),
      number: attempts,
      trigger: delivery.trigger,
      url: delivery.url,
      startedAt: result.startedAt,
      durationMs: result.durationMs,
      statusCode,
      failureKind,
      responseHeaders: result.responseHeaders ?? null,
      responseBody: result.responseBody ?? null,
      decision: decision.kind,
      delayMs: decision.kind === 'retry' ? decision.delayMs : null,
      reason:
        decision.kind === 'retry' ? decision.reason : decision.kind === 'expired' ? decision.reason : null,
      detail,
    },
  };
}

/**
 * Marks the queued outcome of an earlier claim of this delivery, if something overtook it while it
 * could not be written (its lease ran out, and another worker's attempt, a replay or a resend
 * changed the delivery): written as it stands, it would undo what happened since (a replayed dead
 * letter failed again without a request). Says whether it did: this claim is then given back, to
 * be sent once the overtaken outcome is logged as history (CompletionWriter).
 */
export function markOvertaken(queued: readonly Completion[], delivery: ClaimedDelivery): boolean {
  const c = queued.find((q) => q.deliveryId === delivery.id);
  if (!c || (c.attempts === delivery.attempts + 1 && c.attempt.trigger === delivery.trigger)) return false;
  c.overtaken = true;
  return true;
}
