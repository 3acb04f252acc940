import { describe, expect, it } from 'vitest';
import type { EndpointPlan } from '../../chaos/catalog.ts';
import type { SeenRow } from '../../chaos/receiver.ts';
import { verify } from '../../chaos/verify.ts';

const START = 1_800_000_000_000;
const plans: EndpointPlan[] = [{ index: 0, name: 'gone410-0', kind: 'gone410', phaseMs: 0 }];

/** One message to a gone410 endpoint: one attempt recorded, one request seen `arrivalAfterMs` after its start. */
function run(durationMs: number, arrivalAfterMs: number) {
  const seen: SeenRow = [0, 'msg_a', START + arrivalAfterMs, 410, 0, 0];
  return verify({
    plans,
    messages: 1,
    published: new Map([[0, 'msg_a']]),
    courier: {
      messages: new Map([['msg_a', 0]]),
      deliveries: [{ id: 1, messageId: 'msg_a', endpointIndex: 0, state: 'failed', attempts: 1 }],
      attempts: [
        {
          deliveryId: 1,
          number: 1,
          startedAt: START,
          durationMs,
          status: 410,
          failure: null,
          decision: 'failed',
        },
      ],
    },
    report: { rows: [seen], maxConcurrent: {}, maxSameId: 1, overlaps: [], downs: {} },
    faults: [],
    maxAttempts: 6,
    requestTimeoutMs: 2_000,
    leaseMs: 8_000,
  }).violations;
}

describe('verify: matching a counted attempt to the request its receiver saw', () => {
  it('matches a request that arrived soon after the attempt started', () => {
    expect(run(5, 3)).toEqual([]);
  });

  it('matches a request a loaded worker wrote late, within the attempt it recorded', () => {
    // The worker took 2.5 s to get its answer; the request reached the receiver 2.4 s after the start.
    expect(run(2_500, 2_400)).toEqual([]);
  });

  it('reports a request that arrived long after the attempt had its outcome', () => {
    const violations = run(5, 5_000);
    expect(violations).toContain(
      'gone410-0 msg_a (seq 0): attempt 1 (410) was counted but never reached the receiver',
    );
  });
});
