import { randomBytes } from 'node:crypto';

/** Endpoint signing secrets: `whsec_` + base64 of 24–75 random bytes (Standard Webhooks, Svix). */
export const SECRET_PREFIX = 'whsec_';
export const MIN_SECRET_BYTES = 24;
export const MAX_SECRET_BYTES = 75;
const GENERATED_SECRET_BYTES = 32;

// Standard base64 with its padding, as Svix takes it and receivers' verifiers decode it: a secret
// in base64url, or unpadded, would be signed with here and fail to decode (or decode to other
// bytes) in the receiver's library.
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/** A secret that cannot be used. The message never contains the secret itself. */
export class SecretFormatError extends Error {
  readonly code = 'INVALID_SECRET';
  override readonly name = 'SecretFormatError';
}

export function generateSecret(): string {
  return formatSecret(randomBytes(GENERATED_SECRET_BYTES));
}

export function formatSecret(bytes: Uint8Array): string {
  checkLength(bytes.length);
  return SECRET_PREFIX + Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64');
}

/** Decodes a secret given with or without the `whsec_` prefix, in standard, padded base64. */
export function parseSecret(secret: string): Buffer {
  if (secret.startsWith('whsk_') || secret.startsWith('whpk_')) {
    throw new SecretFormatError('asymmetric (v1a) keys are not supported; expected a whsec_ secret');
  }
  const encoded = secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret;
  // Buffer.from(…, 'base64') silently skips bad characters and truncates, so validate the shape first.
  if (encoded.length === 0 || !BASE64.test(encoded)) {
    throw new SecretFormatError(
      'secret is not valid base64 (expected whsec_ followed by standard base64 with its = padding)',
    );
  }
  const bytes = Buffer.from(encoded, 'base64');
  checkLength(bytes.length);
  return bytes;
}

export function isValidSecret(secret: string): boolean {
  try {
    parseSecret(secret);
    return true;
  } catch {
    return false;
  }
}

function checkLength(length: number): void {
  if (length < MIN_SECRET_BYTES || length > MAX_SECRET_BYTES) {
    throw new SecretFormatError(
      `secret must be ${MIN_SECRET_BYTES}–${MAX_SECRET_BYTES} bytes once decoded, got ${length}`,
    );
  }
}
