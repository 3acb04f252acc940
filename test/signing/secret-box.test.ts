import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { generateSecret } from '../../src/signing/index.ts';
import { SecretBox } from '../../src/signing/secret-box.ts';

describe('SecretBox (signing secrets at rest)', () => {
  const box = new SecretBox(randomBytes(32));

  it('seals with a fresh nonce each time and opens back to the same secret', () => {
    const secret = generateSecret();
    const a = box.seal(secret);
    const b = box.seal(secret);
    expect(a).toMatch(/^enc:v1:[A-Za-z0-9+/]+=*$/);
    expect(a).not.toBe(b);
    expect(a).not.toContain(secret.slice(6));
    expect(box.open(a)).toBe(secret);
    expect(box.open(b)).toBe(secret);
  });

  it('refuses a tampered value or another key', () => {
    const sealed = box.seal(generateSecret());
    const raw = Buffer.from(sealed.slice(7), 'base64');
    raw[raw.length - 1]! ^= 1;
    expect(() => box.open(`enc:v1:${raw.toString('base64')}`)).toThrow();
    expect(() => new SecretBox(randomBytes(32)).open(sealed)).toThrow();
  });

  it('refuses a value whose tag was cut short, which GCM would otherwise check on fewer bytes', () => {
    // An empty secret's value is its nonce and tag alone; the first 8 bytes of a tag are what GCM
    // computes for an 8-byte tag, so a shortened value would still open.
    const raw = Buffer.from(box.seal('').slice(7), 'base64');
    expect(raw).toHaveLength(28);
    expect(() => box.open(`enc:v1:${raw.subarray(0, 20).toString('base64')}`)).toThrow(/truncated/);
  });

  it('returns values stored before encryption as they are, and wants a 32-byte key', () => {
    expect(box.open('whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw')).toBe('whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw');
    expect(() => new SecretBox(randomBytes(16))).toThrow(/32 bytes/);
  });
});
