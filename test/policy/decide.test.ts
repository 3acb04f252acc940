import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { backoffDelay, nominalDelay } from '../../src/policy/backoff.ts';
import { decide } from '../../src/policy/decide.ts';
import { DEFAULT_POLICY, definePolicy } from '../../src/policy/defaults.ts';
import { giveUpAt } from '../../src/policy/give-up.ts';
import type { Decision, DecisionInput, Outcome, RetryPolicy } from '../../src/policy/types.ts';
import { seededRandom } from '../../src/random.ts';

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const START = Date.UTC(2026, 0, 1);
const NOW = START + 5 * MINUTE;
const DEADLINE = giveUpAt(START, DEFAULT_POLICY.giveUp);
const NO_JITTER = definePolicy({ backoff: { jitter: 'none' } });

function input(outcome: Outcome, overrides: Partial<DecisionInput> = {}): DecisionInput {
  return {
    outcome,
    attempts: 1,
    giveUpAt: DEADLINE,
    policy: DEFAULT_POLICY,
    now: NOW,
    random: seededRandom(7),
    ...overrides,
  };
}

function status(code: number, headers?: Record<string, string>): Outcome {
  return { kind: 'response', status: code, headers };
}

function expectRetry(decision: Decision): Extract<Decision, { kind: 'retry' }> {
  if (decision.kind !== 'retry') throw new Error(`expected a retry, got ${JSON.stringify(decision)}`);
  return decision;
}

describe('decide: terminal outcomes', () => {
  it('2xx is delivered', () => {
    const decision = decide(input(status(204)));
    expect(decision).toEqual({
      kind: 'delivered',
      classification: expect.objectContaining({ verdict: 'success' }),
    });
  });

  it('a permanent failure fails with the classification as detail', () => {
    const decision = decide(input(status(410)));
    expect(decision.kind).toBe('failed');
    expect(decision.kind === 'failed' && decision.detail).toBe(
      'HTTP 410 Gone: the endpoint no longer exists; not retried',
    );
  });

  it('an SSRF refusal fails', () => {
    expect(decide(input({ kind: 'refused', reason: 'loopback address' })).kind).toBe('failed');
  });

  it('success and permanent failures are reported even when the delivery is exhausted', () => {
    expect(decide(input(status(200), { attempts: 16, now: DEADLINE + 1 })).kind).toBe('delivered');
    expect(decide(input(status(400), { attempts: 16, now: DEADLINE + 1 })).kind).toBe('failed');
  });

  it('lenient mode retries what strict mode fails', () => {
    const lenient = definePolicy({ classifier: { mode: 'lenient' } });
    expect(decide(input(status(422), { policy: lenient })).kind).toBe('retry');
  });
});

describe('decide: expiry', () => {
  it('expires after max attempts', () => {
    const decision = decide(input(status(500), { attempts: 16 }));
    expect(decision).toMatchObject({ kind: 'expired', reason: 'max_attempts' });
  });

  it('expires once the give-up time has come', () => {
    const decision = decide(input({ kind: 'network', failure: 'timeout' }, { attempts: 4, now: DEADLINE }));
    expect(decision).toMatchObject({
      kind: 'expired',
      reason: 'deadline',
      detail: 'gave up: the retry window is over',
    });
  });
});

describe('decide: backoff', () => {
  it('waits the jittered backoff, deterministically for a seed', () => {
    const decision = expectRetry(decide(input(status(500), { attempts: 3, random: seededRandom(42) })));
    const expected = backoffDelay(3, DEFAULT_POLICY.backoff, seededRandom(42));
    expect(decision.delayMs).toBe(expected);
    expect(decision.at).toBe(NOW + expected);
    expect(decision.reason).toBe('backoff');
    expect(decision.delayMs).toBeGreaterThanOrEqual(2 * MINUTE);
    expect(decision.delayMs).toBeLessThanOrEqual(4 * MINUTE);
    expect(decision.detail).toMatch(/^attempt 4 of 16 in \d+m(\d+s)? \(backoff 4m, equal jitter\)$/);
    expect(decide(input(status(500), { attempts: 3, random: seededRandom(42) }))).toEqual(decision);
  });

  it('retries network failures the same way', () => {
    const decision = expectRetry(
      decide(input({ kind: 'network', failure: 'connection_refused' }, { policy: NO_JITTER })),
    );
    expect(decision).toMatchObject({
      delayMs: MINUTE,
      reason: 'backoff',
      detail: 'attempt 2 of 16 in 1m (backoff 1m, no jitter)',
    });
  });

  it('retries exactly at the give-up time without clamping', () => {
    const decision = expectRetry(decide(input(status(502), { policy: NO_JITTER, giveUpAt: NOW + MINUTE })));
    expect(decision).toMatchObject({
      at: NOW + MINUTE,
      delayMs: MINUTE,
      detail: 'attempt 2 of 16 in 1m (backoff 1m, no jitter)',
    });
  });

  it('clamps a backoff that would pass the give-up time: one last attempt at the deadline', () => {
    const decision = expectRetry(
      decide(input(status(500), { attempts: 8, giveUpAt: NOW + 40 * MINUTE, random: () => 0.99 })),
    );
    expect(decision).toMatchObject({ at: NOW + 40 * MINUTE, delayMs: 40 * MINUTE, reason: 'backoff' });
    expect(decision.detail).toBe(
      'attempt 9 of 16 in 40m (backoff 1h, equal jitter; clamped to the give-up time: last attempt)',
    );
  });

  it('expires rather than make the last attempt sooner than half the backoff', () => {
    // The attempt before came just short of the deadline (a Retry-After date can do that):
    // clamping would send a second request 1 ms after the failure.
    expect(decide(input(status(500), { attempts: 4, giveUpAt: NOW + 1 }))).toMatchObject({
      kind: 'expired',
      reason: 'deadline',
      detail:
        'only 1ms left before the give-up time, less than half the 8m backoff; giving up rather than retrying at once',
    });
    const half = expectRetry(decide(input(status(500), { attempts: 4, giveUpAt: NOW + 4 * MINUTE })));
    expect(half).toMatchObject({ at: NOW + 4 * MINUTE, reason: 'backoff' });
  });
});

describe('decide: Retry-After', () => {
  it('is honoured when longer than the backoff', () => {
    const decision = expectRetry(decide(input(status(429, { 'Retry-After': '600' }), { policy: NO_JITTER })));
    expect(decision).toMatchObject({
      at: NOW + 10 * MINUTE,
      delayMs: 10 * MINUTE,
      reason: 'retry_after',
      detail: 'attempt 2 of 16 in 10m (Retry-After 10m honoured, longer than backoff 1m)',
    });
  });

  it('is honoured from a 429 whose body was then cut off (a network failure after the status)', () => {
    const outcome: Outcome = {
      kind: 'network',
      failure: 'connection_reset',
      answered: { status: 429, headers: { 'retry-after': '600' } },
    };
    const decision = expectRetry(decide(input(outcome, { policy: NO_JITTER })));
    expect(decision).toMatchObject({ delayMs: 10 * MINUTE, reason: 'retry_after' });
  });

  it('loses to a longer backoff', () => {
    const decision = expectRetry(decide(input(status(503, { 'retry-after': '5' }), { policy: NO_JITTER })));
    expect(decision).toMatchObject({
      delayMs: MINUTE,
      reason: 'backoff',
      detail: 'attempt 2 of 16 in 1m (backoff 1m, no jitter; Retry-After 5s is not longer)',
    });
  });

  it('accepts an HTTP-date', () => {
    const date = new Date(NOW + 2 * HOUR).toUTCString();
    const decision = expectRetry(decide(input(status(503, { 'Retry-After': date }), { random: () => 0 })));
    expect(decision).toMatchObject({ delayMs: 2 * HOUR, reason: 'retry_after' });
  });

  it('is jittered up to a tenth later, never earlier, and never past the give-up time', () => {
    const date = new Date(NOW + 2 * HOUR).toUTCString();
    const delays = Array.from({ length: 50 }, (_, seed) => {
      const decision = expectRetry(
        decide(input(status(503, { 'Retry-After': date }), { random: seededRandom(seed) })),
      );
      expect(decision.reason).toBe('retry_after');
      expect(decision.detail).toMatch(/Retry-After 2h honoured, longer than backoff .+, plus jitter\)$/);
      return decision.delayMs;
    });
    // Deliveries turned away with one date do not all come back in the same instant.
    expect(new Set(delays).size).toBeGreaterThan(45);
    expect(Math.min(...delays)).toBeGreaterThanOrEqual(2 * HOUR);
    expect(Math.max(...delays)).toBeLessThanOrEqual(2 * HOUR + 12 * MINUTE);
    // With less room before the give-up time, the jitter shrinks to fit; without jitter, none.
    const tight = decide(
      input(status(503, { 'Retry-After': date }), { giveUpAt: NOW + 2 * HOUR + 1_000, random: () => 0.99 }),
    );
    expect(tight).toMatchObject({ kind: 'retry', delayMs: 2 * HOUR + 1_000 });
    const exact = decide(
      input(status(503, { 'Retry-After': date }), { policy: NO_JITTER, random: () => 0.99 }),
    );
    expect(exact).toMatchObject({ kind: 'retry', delayMs: 2 * HOUR });
  });

  it('is ignored on statuses outside retryAfter.statuses', () => {
    const decision = expectRetry(decide(input(status(500, { 'Retry-After': '600' }), { policy: NO_JITTER })));
    expect(decision).toMatchObject({
      delayMs: MINUTE,
      reason: 'backoff',
      detail: 'attempt 2 of 16 in 1m (backoff 1m, no jitter)',
    });
    const on500 = definePolicy({ retryAfter: { statuses: [500] } });
    expect(decide(input(status(500, { 'Retry-After': '600' }), { policy: on500 }))).toMatchObject({
      reason: 'retry_after',
    });
  });

  it('an unreadable header falls back to the backoff', () => {
    const decision = expectRetry(
      decide(input(status(429, { 'Retry-After': 'soon' }), { policy: NO_JITTER })),
    );
    expect(decision).toMatchObject({ delayMs: MINUTE, reason: 'backoff' });
  });

  it('is clamped to the ceiling', () => {
    const policy = definePolicy({ retryAfter: { ceilingMs: 5 * MINUTE } });
    // Jitter too stops at the ceiling.
    const decision = expectRetry(
      decide(input(status(429, { 'Retry-After': '3600' }), { policy, random: () => 0.99 })),
    );
    expect(decision).toMatchObject({ delayMs: 5 * MINUTE, reason: 'retry_after' });
    expect(decision.detail).toMatch(
      /^attempt 2 of 16 in 5m \(Retry-After 1h \(clamped to the 5m ceiling\) honoured/,
    );
  });

  it('clamped below the backoff, the backoff wins', () => {
    const policy = definePolicy({ retryAfter: { ceilingMs: 10_000 } });
    const decision = expectRetry(
      decide(input(status(429, { 'Retry-After': '3600' }), { policy, attempts: 3 })),
    );
    expect(decision.reason).toBe('backoff');
    expect(decision.delayMs).toBeGreaterThanOrEqual(2 * MINUTE);
  });

  it('expires rather than clamp a longer backoff to the deadline below a honoured Retry-After', () => {
    // Found by the property below: backoff (16m, jittered up) beat Retry-After 675 s, but only
    // 674,999 ms were left, so the clamp to the deadline would have come back 1 ms too early.
    const decision = decide(
      input(status(429, { 'Retry-After': '675' }), {
        attempts: 5,
        now: DEADLINE - 674_999,
        random: () => 0.99,
      }),
    );
    expect(decision).toMatchObject({ kind: 'expired', reason: 'deadline' });
  });

  it('a longer request than the ceiling is capped, not ignored', () => {
    const policy = definePolicy({ retryAfter: { ceilingMs: 5 * MINUTE } });
    for (const asked of ['31536001', '99999999999999999999999999', 'Fri, 01 Jan 2100 00:00:00 GMT']) {
      const decision = expectRetry(
        decide(input(status(503, { 'Retry-After': asked }), { policy, random: () => 0.99 })),
      );
      expect(decision).toMatchObject({ delayMs: 5 * MINUTE, reason: 'retry_after' });
    }
  });

  it('reaching past the give-up time expires the delivery rather than undercutting the receiver', () => {
    const decision = decide(input(status(429, { 'Retry-After': '3600' }), { giveUpAt: NOW + 30 * MINUTE }));
    expect(decision).toMatchObject({
      kind: 'expired',
      reason: 'deadline',
      detail:
        'Retry-After 1h reaches past the give-up time (30m left); giving up rather than returning before the receiver allows',
    });
  });
});

describe('decide: a Retry-After holds the endpoint', () => {
  it('until the honoured wait, without the jitter its own delivery gets', () => {
    const decision = expectRetry(
      decide(input(status(429, { 'Retry-After': '600' }), { random: () => 0.99 })),
    );
    expect(decision.holdEndpointUntil).toBe(NOW + 10 * MINUTE);
    expect(decision.at).toBeGreaterThan(NOW + 10 * MINUTE);
  });

  it('also when the backoff is longer: the receiver asked not to be sent anything before then', () => {
    const decision = expectRetry(decide(input(status(503, { 'retry-after': '5' }), { policy: NO_JITTER })));
    expect(decision).toMatchObject({ reason: 'backoff', at: NOW + MINUTE, holdEndpointUntil: NOW + 5_000 });
  });

  it('to the ceiling, and also when the delivery expires', () => {
    const policy = definePolicy({ retryAfter: { ceilingMs: 5 * MINUTE } });
    expect(decide(input(status(429, { 'Retry-After': '3600' }), { policy }))).toMatchObject({
      kind: 'retry',
      holdEndpointUntil: NOW + 5 * MINUTE,
    });
    expect(
      decide(input(status(429, { 'Retry-After': '3600' }), { giveUpAt: NOW + 30 * MINUTE })),
    ).toMatchObject({ kind: 'expired', holdEndpointUntil: NOW + HOUR });
    expect(
      decide(input(status(429, { 'Retry-After': '60' }), { attempts: DEFAULT_POLICY.giveUp.maxAttempts })),
    ).toMatchObject({ kind: 'expired', reason: 'max_attempts', holdEndpointUntil: NOW + MINUTE });
  });

  it('not without a usable Retry-After, on another status, for a date passed, or on a permanent failure', () => {
    const outcomes: Outcome[] = [
      status(429),
      status(429, { 'Retry-After': 'soon' }),
      status(429, { 'Retry-After': new Date(NOW - MINUTE).toUTCString() }),
      status(500, { 'Retry-After': '600' }),
      status(410, { 'Retry-After': '600' }),
      { kind: 'network', failure: 'timeout' },
    ];
    for (const outcome of outcomes) {
      const decision = decide(input(outcome));
      expect(decision.kind).not.toBe('delivered');
      expect('holdEndpointUntil' in decision, JSON.stringify(outcome)).toBe(false);
    }
    const permanent = definePolicy({ classifier: { overrides: { 429: 'permanent' } } });
    expect(decide(input(status(429, { 'Retry-After': '600' }), { policy: permanent }))).toEqual({
      kind: 'failed',
      detail: expect.any(String),
      classification: expect.objectContaining({ verdict: 'permanent' }),
    });
  });
});

describe('decide: invalid input', () => {
  it.each([{ attempts: 0 }, { attempts: 1.5 }, { now: Number.NaN }, { giveUpAt: Number.POSITIVE_INFINITY }])(
    '%o throws a RangeError',
    (overrides) => {
      expect(() => decide(input(status(500), overrides))).toThrow(RangeError);
    },
  );
});

describe('decide: invariants (property)', () => {
  const policies = fc.constantFrom<RetryPolicy>(
    DEFAULT_POLICY,
    NO_JITTER,
    definePolicy({ backoff: { jitter: 'full' }, retryAfter: { ceilingMs: 10 * MINUTE } }),
    definePolicy({
      backoff: { scheduleMs: [5_000, 300_000, 1_800_000, 7_200_000] },
      giveUp: { maxAttempts: 8 },
    }),
  );

  it('never retries after the give-up time, never before a honoured Retry-After', () => {
    fc.assert(
      fc.property(
        policies,
        fc.integer({ min: 1, max: 20 }),
        fc.integer({ min: -HOUR, max: 80 * HOUR }),
        fc.constantFrom(429, 500, 503),
        fc.option(fc.integer({ min: 0, max: 2 * 86_400 })),
        fc.integer(),
        (policy, attempts, elapsed, code, retryAfter, seed) => {
          const now = START + elapsed;
          const headers = retryAfter === null ? undefined : { 'Retry-After': String(retryAfter) };
          const decision = decide(
            input(status(code, headers), { policy, attempts, now, random: seededRandom(seed) }),
          );
          if (decision.kind !== 'retry') {
            expect(decision.kind).toBe('expired');
            return;
          }
          expect(decision.at).toBe(now + decision.delayMs);
          expect(decision.delayMs).toBeGreaterThanOrEqual(0);
          expect(decision.at).toBeLessThanOrEqual(DEADLINE);
          expect(attempts).toBeLessThan(policy.giveUp.maxAttempts);
          if (policy.backoff.jitter !== 'full') {
            const nominal = nominalDelay(attempts, policy.backoff);
            expect(decision.delayMs).toBeGreaterThanOrEqual(Math.ceil(nominal / 2));
          }
          if (retryAfter !== null && policy.retryAfter.statuses.includes(code)) {
            expect(decision.delayMs).toBeGreaterThanOrEqual(
              Math.min(retryAfter * 1000, policy.retryAfter.ceilingMs),
            );
          }
        },
      ),
    );
  });
});

describe('decide: a receiver that fails in 10 ms, forever (virtual time)', () => {
  const WINDOW = 2 * HOUR;

  /** Attempt, decide, jump to `at`, repeat; returns every attempt's start time and the final decision. */
  function simulate(seed: number): { starts: number[]; final: Decision } {
    const random = seededRandom(seed);
    const deadline = giveUpAt(START, DEFAULT_POLICY.giveUp);
    const starts: number[] = [];
    let t = START;
    while (starts.length <= DEFAULT_POLICY.giveUp.maxAttempts) {
      starts.push(t);
      const outcome = status(500);
      const now = t + 10;
      const decision = decide({
        outcome,
        attempts: starts.length,
        giveUpAt: deadline,
        policy: DEFAULT_POLICY,
        now,
        random,
      });
      if (decision.kind !== 'retry') return { starts, final: decision };
      t = decision.at;
    }
    throw new Error('the delivery never stopped');
  }

  /** The most attempt starts that fall in any closed window of the given length. */
  function densest(starts: readonly number[], windowMs: number): number {
    let best = 0;
    for (let i = 0, j = 0; j < starts.length; j++) {
      while (starts[j]! - starts[i]! > windowMs) i++;
      best = Math.max(best, j - i + 1);
    }
    return best;
  }

  /**
   * The bound, from the policy alone. Equal jitter never waits less than ⌈d/2⌉ (the 10 ms response
   * only adds to the gap), so the closest attempts can be is 30s, 1m, 2m, 4m, 8m, 16m, then 30m apart.
   * Gaps never shrink, so the densest window starts at the first attempt: starts at 0, 30s, 1m30s,
   * 3m30s, 7m30s, 15m30s, 31m30s, 1h1m30s, 1h31m30s fit in 2h; the 10th would be at 2h1m30s.
   * So at most 9 attempts in any 2 hours (a hot loop would make ~720,000).
   */
  function boundFromPolicy(windowMs: number): number {
    const { backoff, giveUp } = DEFAULT_POLICY;
    const shortest = [0];
    for (let n = 1; n < giveUp.maxAttempts; n++) {
      shortest.push(shortest[n - 1]! + Math.ceil(nominalDelay(n, backoff) / 2));
    }
    return densest(shortest, windowMs);
  }

  it('the policy bounds attempts per 2-hour window at 9', () => {
    expect(boundFromPolicy(WINDOW)).toBe(9);
  });

  it('stays within the bound, stops after 16 attempts and expires, for any seed', () => {
    const bound = boundFromPolicy(WINDOW);
    fc.assert(
      fc.property(fc.integer(), (seed) => {
        const { starts, final } = simulate(seed);
        expect(densest(starts, WINDOW)).toBeLessThanOrEqual(bound);
        expect(starts).toHaveLength(16);
        expect(final).toMatchObject({ kind: 'expired', reason: 'max_attempts' });
        // 15 waits of at most 1m … 32m, 1h: about 10 hours, far inside the 72-hour window.
        expect(starts.at(-1)! - START).toBeLessThanOrEqual(603 * MINUTE + 15 * 10);
      }),
      { numRuns: 300 },
    );
  });
});
