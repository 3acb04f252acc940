import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { classify } from '../../src/policy/classify.ts';
import type { ClassifierMode, ClassifierPolicy, Verdict } from '../../src/policy/types.ts';
import { NETWORK_FAILURE_KINDS } from '../../src/policy/types.ts';

const STRICT: ClassifierPolicy = { mode: 'strict' };
const LENIENT: ClassifierPolicy = { mode: 'lenient' };

interface Expected {
  readonly verdict: Verdict;
  readonly countsTowardStreak: boolean;
}

// The document's table, written out independently of the implementation.
const PERMANENT_CLASS = [400, 401, 403, 410, 422];
function expected(status: number, mode: ClassifierMode): Expected {
  if (status >= 200 && status <= 299) return { verdict: 'success', countsTowardStreak: false };
  if (PERMANENT_CLASS.includes(status)) {
    return { verdict: mode === 'strict' ? 'permanent' : 'retry', countsTowardStreak: true };
  }
  // Retried, but each one escalates: a URL that may be fixed (404) or must be (moved for good).
  if (status === 404 || status === 301 || status === 308)
    return { verdict: 'retry', countsTowardStreak: true };
  return { verdict: 'retry', countsTowardStreak: false };
}

const TAIL: Record<Verdict, RegExp> = { success: /delivered$/, retry: /retr/, permanent: /not retried$/ };

function response(status: number) {
  return { kind: 'response', status } as const;
}

describe('classify: every status 100–599', () => {
  for (const policy of [STRICT, LENIENT]) {
    it(`${policy.mode} mode follows the table`, () => {
      for (let status = 100; status <= 599; status++) {
        const got = classify(response(status), policy);
        const want = expected(status, policy.mode);
        expect({ status, verdict: got.verdict, counts: got.countsTowardStreak }).toEqual({
          status,
          verdict: want.verdict,
          counts: want.countsTowardStreak,
        });
        expect(got.reason).toContain(`HTTP ${status}`);
        expect(got.reason).toMatch(TAIL[got.verdict]);
      }
    });
  }

  it('writes human reasons', () => {
    expect(classify(response(410), STRICT).reason).toBe(
      'HTTP 410 Gone: the endpoint no longer exists; not retried',
    );
    expect(classify(response(200), STRICT).reason).toBe('HTTP 200 OK: delivered');
    expect(classify(response(404), STRICT).reason).toMatch(
      /^HTTP 404 Not Found: ambiguous .*retried conservatively, counts toward the endpoint's failure streak$/,
    );
    expect(classify(response(401), STRICT).reason).toMatch(/authentication.*not retried$/);
    expect(classify(response(429), STRICT).reason).toMatch(/rate limiting.*will retry$/);
    expect(classify(response(418), STRICT).reason).toMatch(/when in doubt/);
    expect(classify(response(410), LENIENT).reason).toMatch(
      /lenient mode retries every 4xx.*failure streak$/,
    );
  });

  it('treats every 3xx as a failed attempt because redirects are never followed', () => {
    for (let status = 300; status <= 399; status++) {
      const got = classify(response(status), STRICT);
      expect(got.verdict).toBe('retry');
      expect(got.reason).toMatch(/redirects are never followed/);
      // Moved for good (301, 308): the URL needs changing, so the streak escalates it, as for a 404.
      expect(got.countsTowardStreak).toBe(status === 301 || status === 308);
    }
  });
});

describe('classify: invalid statuses', () => {
  it.each([0, 99, 600, 999, -1, 200.5, Number.NaN, Number.POSITIVE_INFINITY])(
    '%s is retried as invalid',
    (status) => {
      const got = classify(response(status), STRICT);
      expect(got.verdict).toBe('retry');
      expect(got.countsTowardStreak).toBe(false);
      expect(got.reason).toMatch(/not a valid status code/);
    },
  );

  it('never throws, whatever the number', () => {
    fc.assert(
      fc.property(fc.oneof(fc.integer(), fc.double()), fc.constantFrom(STRICT, LENIENT), (status, policy) => {
        expect(['success', 'retry', 'permanent']).toContain(classify(response(status), policy).verdict);
      }),
    );
  });
});

describe('classify: network failures and refusals', () => {
  it.each(NETWORK_FAILURE_KINDS)('%s is retried and does not count toward the streak', (failure) => {
    for (const policy of [STRICT, LENIENT]) {
      const got = classify({ kind: 'network', failure }, policy);
      expect(got.verdict).toBe('retry');
      expect(got.countsTowardStreak).toBe(false);
      expect(got.reason).toMatch(/; will retry$/);
    }
  });

  it('names the failure and keeps the low-level message', () => {
    expect(classify({ kind: 'network', failure: 'connection_refused' }, STRICT).reason).toBe(
      'connection refused: the receiver is not listening; will retry',
    );
    const reason = classify(
      { kind: 'network', failure: 'dns', message: 'ENOTFOUND hooks.example' },
      STRICT,
    ).reason;
    expect(reason).toBe(
      'DNS lookup failed: the host name did not resolve (ENOTFOUND hooks.example); will retry',
    );
  });

  it('a refusal by the SSRF guard is permanent and counts toward the streak', () => {
    const got = classify({ kind: 'refused', reason: 'resolves to a private address (10.0.0.7)' }, LENIENT);
    expect(got).toEqual({
      verdict: 'permanent',
      reason: 'refused to send: resolves to a private address (10.0.0.7); not retried',
      countsTowardStreak: true,
    });
  });
});

describe('classify: overrides apply after the mode', () => {
  it('changes only the overridden statuses', () => {
    const policy: ClassifierPolicy = { mode: 'strict', overrides: { 404: 'permanent' } };
    for (let status = 100; status <= 599; status++) {
      if (status === 404) continue;
      expect(classify(response(status), policy)).toEqual(classify(response(status), STRICT));
    }
    const got = classify(response(404), policy);
    expect(got).toEqual({
      verdict: 'permanent',
      reason: 'HTTP 404 Not Found: the policy overrides this status; not retried',
      countsTowardStreak: true,
    });
  });

  it.each([
    ['strict', 503, 'permanent', true],
    ['strict', 410, 'retry', true], // forced to retry, it still counts like lenient mode
    ['strict', 500, 'retry', false],
    ['strict', 418, 'success', false],
    ['lenient', 410, 'permanent', true],
    ['lenient', 422, 'success', false],
  ] as const)('%s mode, %i overridden to %s', (mode, status, verdict, countsTowardStreak) => {
    const got = classify(response(status), { mode, overrides: { [status]: verdict } });
    expect(got.verdict).toBe(verdict);
    expect(got.countsTowardStreak).toBe(countsTowardStreak);
    expect(got.reason).toMatch(/the policy overrides this status/);
  });
});
