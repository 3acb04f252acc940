import { createSecretKey, webcrypto } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  sign,
  signatureHeader,
  type VerificationErrorCode,
  verify,
  WebhookVerificationError,
  webhookHeaders,
} from '../../src/signing/index.ts';
import { parseSecret } from '../../src/signing/secrets.ts';

// The Standard Webhooks test vector (libraries/javascript/src/webhook.test.ts and Svix's worker.rs).
const SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
const MSG_ID = 'msg_p5jXN8AQM9LWM0D4loKWxJek';
const TIMESTAMP = 1614265330;
const BODY = '{"test": 2432232314}';
const EXPECTED = 'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=';

const key = parseSecret(SECRET);
const otherKey = Buffer.alloc(32, 7);
const at = (sec: number) => () => sec * 1000;
const vectorHeaders = {
  'webhook-id': MSG_ID,
  'webhook-timestamp': String(TIMESTAMP),
  'webhook-signature': EXPECTED,
};

function verificationError(run: () => unknown): VerificationErrorCode {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(WebhookVerificationError);
    return (error as WebhookVerificationError).code;
  }
  throw new Error('expected a WebhookVerificationError');
}

describe('sign', () => {
  it('matches the Standard Webhooks test vector for every body type', () => {
    expect(sign(key, MSG_ID, TIMESTAMP, BODY)).toBe(EXPECTED);
    expect(sign(key, MSG_ID, TIMESTAMP, Buffer.from(BODY))).toBe(EXPECTED);
    expect(sign(key, MSG_ID, TIMESTAMP, new TextEncoder().encode(BODY))).toBe(EXPECTED);
  });

  it('signs the exact body bytes, even when they are not UTF-8', async () => {
    const body = Buffer.from([0x7b, 0xff, 0xfe, 0x00, 0xc3, 0x28, 0x80, 0x7d]);
    // An independent HMAC over id.timestamp.body computed with WebCrypto.
    const cryptoKey = await webcrypto.subtle.importKey('raw', key, { name: 'HMAC', hash: 'SHA-256' }, false, [
      'sign',
    ]);
    const content = Buffer.concat([Buffer.from(`${MSG_ID}.${TIMESTAMP}.`), body]);
    const mac = Buffer.from(await webcrypto.subtle.sign('HMAC', cryptoKey, content));
    expect(sign(key, MSG_ID, TIMESTAMP, body)).toBe(`v1,${mac.toString('base64')}`);
    // A detour through a JS string would have replaced the invalid bytes.
    expect(sign(key, MSG_ID, TIMESTAMP, body.toString())).not.toBe(sign(key, MSG_ID, TIMESTAMP, body));
  });

  it('refuses timestamps that are not whole seconds', () => {
    expect(() => sign(key, MSG_ID, 1614265330.5, BODY)).toThrow(RangeError);
    expect(() => sign(key, MSG_ID, -1, BODY)).toThrow(RangeError);
  });
});

describe('signatureHeader / webhookHeaders', () => {
  it('carries one entry per secret, in order', () => {
    const header = signatureHeader([key, otherKey], MSG_ID, TIMESTAMP, BODY);
    expect(header).toBe(`${EXPECTED} ${sign(otherKey, MSG_ID, TIMESTAMP, BODY)}`);
    expect(signatureHeader([key], MSG_ID, TIMESTAMP, Buffer.from(BODY))).toBe(EXPECTED);
    expect(() => signatureHeader([], MSG_ID, TIMESTAMP, BODY)).toThrow(RangeError);
  });

  it('signs the same with a KeyObject as with the raw secret bytes', () => {
    const keyObject = createSecretKey(key);
    expect(sign(keyObject, MSG_ID, TIMESTAMP, BODY)).toBe(EXPECTED);
    expect(signatureHeader([keyObject, createSecretKey(otherKey)], MSG_ID, TIMESTAMP, BODY)).toBe(
      signatureHeader([key, otherKey], MSG_ID, TIMESTAMP, BODY),
    );
  });

  it('builds the three headers', () => {
    expect(webhookHeaders({ msgId: MSG_ID, timestampSec: TIMESTAMP, body: BODY, secrets: [key] })).toEqual(
      vectorHeaders,
    );
  });
});

describe('verify', () => {
  it('accepts the test vector', () => {
    expect(() => verify(BODY, vectorHeaders, SECRET, { now: at(TIMESTAMP + 10) })).not.toThrow();
    expect(() => verify(Buffer.from(BODY), vectorHeaders, key, { now: at(TIMESTAMP) })).not.toThrow();
  });

  it('looks headers up case-insensitively, in plain objects and Headers', () => {
    const mixedCase = {
      'Webhook-Id': MSG_ID,
      'WEBHOOK-TIMESTAMP': String(TIMESTAMP),
      'webhook-Signature': EXPECTED,
    };
    verify(BODY, mixedCase, SECRET, { now: at(TIMESTAMP) });
    verify(BODY, new Headers(mixedCase), SECRET, { now: at(TIMESTAMP) });
  });

  it('accepts svix-* headers', () => {
    const svixHeaders = {
      'svix-id': MSG_ID,
      'svix-timestamp': String(TIMESTAMP),
      'svix-signature': EXPECTED,
    };
    verify(BODY, svixHeaders, SECRET, { now: at(TIMESTAMP) });
    verify(BODY, new Headers(svixHeaders), SECRET, { now: at(TIMESTAMP) });
  });

  it('accepts when one of several signatures matches, skipping unknown versions', () => {
    const signature = `v1a,${Buffer.alloc(64).toString('base64')} v1,${Buffer.alloc(32).toString('base64')}  ${EXPECTED} v2,xyz`;
    verify(BODY, { ...vectorHeaders, 'webhook-signature': signature }, SECRET, { now: at(TIMESTAMP) });
  });

  it('accepts when one of several secrets matches', () => {
    verify(BODY, vectorHeaders, [otherKey, SECRET], { now: at(TIMESTAMP) });
  });

  it('joins repeated signature headers (Node arrays)', () => {
    const headers = { ...vectorHeaders, 'webhook-signature': ['v1,bm9wZQ==', EXPECTED] };
    verify(BODY, headers, SECRET, { now: at(TIMESTAMP) });
  });

  it('rejects a tampered body, id or timestamp', () => {
    const options = { now: at(TIMESTAMP) };
    expect(verificationError(() => verify(`${BODY} `, vectorHeaders, SECRET, options))).toBe(
      'NO_MATCHING_SIGNATURE',
    );
    const otherId = { ...vectorHeaders, 'webhook-id': `${MSG_ID}x` };
    expect(verificationError(() => verify(BODY, otherId, SECRET, options))).toBe('NO_MATCHING_SIGNATURE');
    const otherTime = { ...vectorHeaders, 'webhook-timestamp': String(TIMESTAMP + 1) };
    expect(verificationError(() => verify(BODY, otherTime, SECRET, options))).toBe('NO_MATCHING_SIGNATURE');
  });

  it('rejects a wrong secret', () => {
    expect(verificationError(() => verify(BODY, vectorHeaders, otherKey, { now: at(TIMESTAMP) }))).toBe(
      'NO_MATCHING_SIGNATURE',
    );
  });

  it('allows 5 minutes of skew in both directions, and no more', () => {
    const ms = TIMESTAMP * 1000;
    for (const now of [ms - 300_000, ms + 300_999]) {
      verify(BODY, vectorHeaders, SECRET, { now: () => now });
    }
    expect(verificationError(() => verify(BODY, vectorHeaders, SECRET, { now: () => ms + 301_000 }))).toBe(
      'TIMESTAMP_TOO_OLD',
    );
    expect(verificationError(() => verify(BODY, vectorHeaders, SECRET, { now: () => ms - 301_000 }))).toBe(
      'TIMESTAMP_TOO_NEW',
    );
  });

  it('honours a custom tolerance', () => {
    const options = { now: at(TIMESTAMP + 11), toleranceSec: 10 };
    expect(verificationError(() => verify(BODY, vectorHeaders, SECRET, options))).toBe('TIMESTAMP_TOO_OLD');
  });

  it('checks the timestamp against the real clock by default', () => {
    expect(verificationError(() => verify(BODY, vectorHeaders, SECRET))).toBe('TIMESTAMP_TOO_OLD');
  });

  it('rejects missing or empty headers', () => {
    for (const name of Object.keys(vectorHeaders)) {
      const headers: Record<string, string> = { ...vectorHeaders };
      delete headers[name];
      expect(verificationError(() => verify(BODY, headers, SECRET, { now: at(TIMESTAMP) }))).toBe(
        'MISSING_HEADERS',
      );
      headers[name] = '';
      expect(
        verificationError(() => verify(BODY, new Headers(headers), SECRET, { now: at(TIMESTAMP) })),
      ).toBe('MISSING_HEADERS');
    }
  });

  it.each(['1614265330abc', '1614265330.0', '-1614265330', ' 1614265330', '1e9', '9'.repeat(16)])(
    'rejects the invalid timestamp %j',
    (timestamp) => {
      const headers = { ...vectorHeaders, 'webhook-timestamp': timestamp };
      expect(verificationError(() => verify(BODY, headers, SECRET, { now: at(TIMESTAMP) }))).toBe(
        'INVALID_TIMESTAMP',
      );
    },
  );

  it.each([
    'garbage',
    'v1',
    'v1,',
    'v1,!!!!',
    EXPECTED.slice(0, -1),
    `${EXPECTED}=`,
    EXPECTED.replace('v1,', 'v1a,'),
    EXPECTED.replace('v1,', 'V1,'),
    ` ${EXPECTED.replace('v1,', 'v1, ')}`,
    'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE',
  ])('rejects the signature header %j', (signature) => {
    const headers = { ...vectorHeaders, 'webhook-signature': signature };
    expect(verificationError(() => verify(BODY, headers, SECRET, { now: at(TIMESTAMP) }))).toBe(
      'NO_MATCHING_SIGNATURE',
    );
  });
});

describe('sign/verify properties', () => {
  const inputs = fc.record({
    secret: fc.uint8Array({ minLength: 24, maxLength: 64 }),
    msgId: fc.string({ minLength: 1, maxLength: 40, unit: 'grapheme' }),
    timestampSec: fc.integer({ min: 0, max: 2 ** 32 }),
    body: fc.uint8Array({ minLength: 1, maxLength: 512 }),
  });

  it('verify accepts sign, and rejects any single changed body byte', () => {
    fc.assert(
      fc.property(inputs, fc.nat(), fc.integer({ min: 1, max: 255 }), (input, position, flip) => {
        const secret = Buffer.from(input.secret);
        const headers = webhookHeaders({ ...input, secrets: [secret] });
        const options = { now: at(input.timestampSec) };
        verify(input.body, headers, secret, options);

        const tampered = Buffer.from(input.body);
        const index = position % tampered.length;
        tampered[index] = tampered[index]! ^ flip;
        expect(verificationError(() => verify(tampered, headers, secret, options))).toBe(
          'NO_MATCHING_SIGNATURE',
        );
      }),
    );
  });
});
