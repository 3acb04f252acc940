import { describe, expect, it } from 'vitest';
import {
  formatSecret,
  generateSecret,
  isValidSecret,
  parseSecret,
  SecretFormatError,
} from '../../src/signing/secrets.ts';

const bytes = (length: number) => Buffer.alloc(length, 0xab);
const base64 = (length: number) => bytes(length).toString('base64');

function secretError(run: () => unknown): SecretFormatError {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(SecretFormatError);
    return error as SecretFormatError;
  }
  throw new Error('expected a SecretFormatError');
}

describe('generateSecret', () => {
  it('is whsec_ + base64 of 32 random bytes', () => {
    const secret = generateSecret();
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(parseSecret(secret)).toHaveLength(32);
    expect(generateSecret()).not.toBe(secret);
  });
});

describe('parseSecret / formatSecret', () => {
  it('round-trips', () => {
    const secret = generateSecret();
    expect(formatSecret(parseSecret(secret))).toBe(secret);
    const raw = Buffer.from('0123456789abcdef0123456789abcdef');
    expect(parseSecret(formatSecret(raw))).toEqual(raw);
  });

  it('accepts the secret with or without the prefix', () => {
    const encoded = base64(24);
    expect(parseSecret(`whsec_${encoded}`)).toEqual(bytes(24));
    expect(parseSecret(encoded)).toEqual(bytes(24));
  });

  it('decodes the Standard Webhooks test secret', () => {
    expect(parseSecret('whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw')).toHaveLength(24);
  });

  it("refuses base64url and missing padding, which receivers' verifiers would not decode alike", () => {
    const raw = Buffer.from(Array.from({ length: 32 }, (_, i) => 250 - i)); // encodes with + and /
    const standard = raw.toString('base64');
    expect(standard).toMatch(/[+/]/);
    expect(parseSecret(standard)).toEqual(raw);
    expect(secretError(() => parseSecret(raw.toString('base64url'))).message).toMatch(/standard base64/);
    expect(secretError(() => parseSecret(standard.replace(/=+$/, ''))).message).toMatch(/= padding/);
  });

  it('accepts 24 to 75 bytes (as Svix) and rejects 23 and 76', () => {
    expect(parseSecret(base64(24))).toHaveLength(24);
    expect(parseSecret(base64(75))).toHaveLength(75);
    expect(secretError(() => parseSecret(base64(23))).message).toMatch(/24–75 bytes.*got 23/);
    expect(secretError(() => parseSecret(base64(76))).message).toMatch(/got 76/);
    expect(() => formatSecret(bytes(23))).toThrow(SecretFormatError);
    expect(() => formatSecret(bytes(76))).toThrow(SecretFormatError);
  });

  it.each([
    ['empty', ''],
    ['prefix only', 'whsec_'],
    ['bad characters', `whsec_${base64(24).slice(0, -4)}!@#$`],
    ['mixed alphabets', `${'+'.repeat(16)}${'_'.repeat(16)}`],
    ['dangling character', `${base64(24)}A`],
    ['wrong padding', `${base64(24)}=`],
    ['whitespace', ` ${base64(24)}`],
    ['asymmetric key', `whsk_${base64(64)}`],
  ])('rejects %s', (_, secret) => {
    const error = secretError(() => parseSecret(secret));
    expect(error.code).toBe('INVALID_SECRET');
    expect(error.name).toBe('SecretFormatError');
    expect(isValidSecret(secret)).toBe(false);
  });

  it('never echoes the secret in the error message', () => {
    for (const secret of [`whsec_${base64(16)}`, `whsec_${base64(24)}%%%%`, `whsk_${base64(32)}`]) {
      const { message } = secretError(() => parseSecret(secret));
      expect(message).not.toContain(secret);
      expect(message).not.toContain(secret.slice(6, 16));
    }
  });

  it('isValidSecret', () => {
    expect(isValidSecret(generateSecret())).toBe(true);
    expect(isValidSecret('whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw')).toBe(true);
    expect(isValidSecret('whsec_short')).toBe(false);
  });
});
