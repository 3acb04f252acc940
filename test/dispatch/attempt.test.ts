import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.ts';
import type { SendResult } from '../../src/delivery/sender.ts';
import { completionFor } from '../../src/dispatch/attempt.ts';
import { DEFAULT_POLICY } from '../../src/policy/defaults.ts';
import { seededRandom } from '../../src/random.ts';
import type { ClaimedDelivery } from '../../src/store/queries/claim.ts';

const clock = new ManualClock(Date.UTC(2026, 0, 1, 12));
const delivery: ClaimedDelivery = {
  id: 1,
  claimedAt: clock.now(),
  leaseUntil: clock.now() + 60_000,
  messageId: 'msg_1',
  endpointId: 'ep_1',
  attempts: 0,
  giveUpAt: null,
  trigger: 0,
  eventType: 'invoice.paid',
  payload: Buffer.from('{}'),
  url: 'https://example.com/hook',
  headers: {},
  endpointPolicy: null,
  appPolicy: null,
  secrets: [],
  maxInFlight: 10,
  publicOnly: false,
};

function attemptFor(result: Partial<SendResult>) {
  const sent: SendResult = {
    outcome: { kind: 'network', failure: 'timeout', message: 'no complete response within 15000 ms' },
    startedAt: clock.now(),
    durationMs: 15_000,
    responseStatus: undefined,
    responseHeaders: undefined,
    responseBody: undefined,
    requestWentOut: true,
    ...result,
  };
  return completionFor(delivery, sent, DEFAULT_POLICY, clock, seededRandom(1)).attempt;
}

describe('the attempt row of a completion', () => {
  it('keeps a status that came before the failure (a body too slow), beside the failure', () => {
    expect(attemptFor({ responseStatus: 200, responseBody: 'partial' })).toMatchObject({
      statusCode: 200,
      failureKind: 'timeout',
      responseBody: 'partial',
      decision: 'retry',
    });
  });

  it('has no status when no response began', () => {
    expect(attemptFor({})).toMatchObject({ statusCode: null, failureKind: 'timeout' });
  });
});
