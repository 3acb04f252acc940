import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';

const PREFIX = 'enc:v1:';
const TAG_BYTES = 16;

/**
 * Encrypts signing secrets for storage (AES-256-GCM, a fresh 96-bit nonce each time). Courier must
 * be able to read them back to sign, so they cannot be hashed like API tokens.
 */
export class SecretBox {
  constructor(readonly key: Buffer) {
    if (key.length !== 32) throw new RangeError('the secrets key must be 32 bytes');
  }

  static isSealed(stored: string): boolean {
    return stored.startsWith(PREFIX);
  }

  seal(plain: string): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv);
    const body = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
    return PREFIX + Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64');
  }

  /** Values stored before encryption was enabled are returned as they are. */
  open(stored: string): string {
    if (!SecretBox.isSealed(stored)) return stored;
    const raw = Buffer.from(stored.slice(PREFIX.length), 'base64');
    // A cut-off value would leave a short tag, which GCM accepts down to 4 bytes: refuse it.
    if (raw.length < 12 + TAG_BYTES) throw new RangeError('sealed secret is truncated');
    const decipher = createDecipheriv('aes-256-gcm', this.key, raw.subarray(0, 12), {
      authTagLength: TAG_BYTES,
    });
    decipher.setAuthTag(raw.subarray(12, 12 + TAG_BYTES));
    return Buffer.concat([decipher.update(raw.subarray(12 + TAG_BYTES)), decipher.final()]).toString('utf8');
  }
}
