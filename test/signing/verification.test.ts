/** examine(): every check verify() makes, reported together (verify's own behaviour: standard-webhooks.test.ts). */
import { describe, expect, it } from 'vitest';
import { examine, sign, verify } from '../../src/signing/index.ts';
import { parseSecret } from '../../src/signing/secrets.ts';

// The Standard Webhooks test vector.
const SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
const MSG_ID = 'msg_p5jXN8AQM9LWM0D4loKWxJek';
const TIMESTAMP = 1614265330;
const BODY = '{"test": 2432232314}';
const EXPECTED = 'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=';

const otherKey = Buffer.alloc(32, 7);
const at = (sec: number) => ({ now: () => sec * 1000 + 999 });
const headers = (signature = EXPECTED, timestamp = String(TIMESTAMP)) => ({
  'webhook-id': MSG_ID,
  'webhook-timestamp': timestamp,
  'webhook-signature': signature,
});

describe('examine', () => {
  it('reports a verified webhook: its headers, its age, which secret matched which signature', () => {
    const signatures = `v1a,abc ${sign(otherKey, MSG_ID, TIMESTAMP, BODY)} ${EXPECTED}`;
    expect(examine(BODY, headers(signatures), [otherKey, SECRET], at(TIMESTAMP + 42))).toEqual({
      problem: undefined,
      msgId: MSG_ID,
      timestamp: String(TIMESTAMP),
      ageSec: 42,
      toleranceSec: 300,
      v1Signatures: 2,
      otherSignatures: 1,
      match: { secret: 0, signature: 0 },
    });
    expect(examine(BODY, headers(signatures), [SECRET], at(TIMESTAMP)).match).toEqual({
      secret: 0,
      signature: 1,
    });
  });

  it('checks the signature even when the timestamp is out of tolerance, and the time when nothing matches', () => {
    const old = examine(BODY, headers(), SECRET, at(TIMESTAMP + 301));
    expect(old).toMatchObject({ problem: { code: 'TIMESTAMP_TOO_OLD' }, ageSec: 301, match: { secret: 0 } });
    const ahead = examine(BODY, headers(), SECRET, { ...at(TIMESTAMP - 3600), toleranceSec: 3599 });
    expect(ahead).toMatchObject({
      problem: { code: 'TIMESTAMP_TOO_NEW' },
      ageSec: -3600,
      toleranceSec: 3599,
    });
    const widened = examine(BODY, headers(), SECRET, { ...at(TIMESTAMP + 3600), toleranceSec: 3600 });
    expect(widened.problem).toBeUndefined();

    const forged = examine(`${BODY}\n`, headers(), SECRET, at(TIMESTAMP + 301));
    expect(forged).toMatchObject({ problem: { code: 'TIMESTAMP_TOO_OLD' }, match: undefined });
    expect(examine(`${BODY}\n`, headers(), SECRET, at(TIMESTAMP)).problem?.code).toBe(
      'NO_MATCHING_SIGNATURE',
    );
  });

  it('says which headers are missing or malformed, reading svix-* names too', () => {
    const missing = examine(BODY, { 'webhook-id': MSG_ID }, SECRET, at(TIMESTAMP));
    expect(missing).toMatchObject({
      problem: { code: 'MISSING_HEADERS' },
      msgId: MSG_ID,
      timestamp: undefined,
      v1Signatures: 0,
      otherSignatures: 0,
    });
    const malformed = examine(BODY, headers(EXPECTED, '1614265330.5'), SECRET, at(TIMESTAMP));
    expect(malformed.problem?.code).toBe('INVALID_TIMESTAMP');
    expect(malformed.ageSec).toBeUndefined();
    expect(malformed.match).toBeUndefined();
    const svix = { 'svix-id': MSG_ID, 'svix-timestamp': String(TIMESTAMP), 'svix-signature': EXPECTED };
    expect(examine(BODY, svix, parseSecret(SECRET), at(TIMESTAMP)).match).toEqual({
      secret: 0,
      signature: 0,
    });
  });

  it('fails where verify throws, in its order; signatures joined with ", " as HTTP joins a repeated header', () => {
    const late = TIMESTAMP + 400;
    const early = TIMESTAMP - 400;
    const cases: [Record<string, string>, number, string | undefined][] = [
      [headers(), TIMESTAMP, undefined],
      [headers(`${EXPECTED}, v1,AAAA=`), TIMESTAMP, undefined],
      [headers('v1,AAAA'), TIMESTAMP, 'NO_MATCHING_SIGNATURE'],
      [headers('   '), TIMESTAMP, 'NO_MATCHING_SIGNATURE'],
      [headers('v1,AAAA'), late, 'TIMESTAMP_TOO_OLD'],
      [headers(), early, 'TIMESTAMP_TOO_NEW'],
      [headers(EXPECTED, 'soon'), late, 'INVALID_TIMESTAMP'],
      [{ 'webhook-id': MSG_ID, 'webhook-timestamp': 'soon' }, TIMESTAMP, 'MISSING_HEADERS'],
      [headers(''), TIMESTAMP, 'MISSING_HEADERS'],
    ];
    for (const [i, [given, now, code]] of cases.entries()) {
      expect(examine(BODY, given, SECRET, at(now)).problem?.code, `case ${i}`).toBe(code);
      let thrown: string | undefined;
      try {
        verify(BODY, given, SECRET, at(now));
      } catch (error) {
        thrown = (error as { code: string }).code;
      }
      expect(thrown, `case ${i}`).toBe(code);
    }
  });
});
