import { randomBytes } from 'node:crypto';

/** Endpoint signing secrets: `whsec_` + base64 of 24–64 random bytes (Standard Webhooks, Svix). */
export const SECRET_PREFIX = 'whsec_';
export const MIN_SECRET_BYTES = 24;
export const MAX_SECRET_BYTES = 64;
const GENERATED_SECRET_BYTES = 32;

// One alphabet per string: standard base64, or base64url as some tools emit it.
const BASE64_BODY = /^(?:[A-Za-z0-9+/]*|[A-Za-z0-9\-_]*)$/;

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

/** Decodes a secret given with or without the `whsec_` prefix, in base64 or base64url. */
export function parseSecret(secret: string): Buffer {
  if (secret.startsWith('whsk_') || secret.startsWith('whpk_')) {
    throw new SecretFormatError('asymmetric (v1a) keys are not supported; expected a whsec_ secret');
  }
  const encoded = secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret;
  const body = encoded.replace(/={1,2}$/, '');
  const padding = encoded.length - body.length;
  // Buffer.from(…, 'base64') silently skips bad characters and truncates, so validate the shape first.
  const wellFormed =
    BASE64_BODY.test(body) && body.length % 4 !== 1 && (padding === 0 || (body.length + padding) % 4 === 0);
  if (body.length === 0 || !wellFormed) {
    throw new SecretFormatError('secret is not valid base64 (expected whsec_ followed by base64)');
  }
  const bytes = Buffer.from(body, 'base64');
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
