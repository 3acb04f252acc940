export {
  formatSecret,
  generateSecret,
  isValidSecret,
  MAX_SECRET_BYTES,
  MIN_SECRET_BYTES,
  parseSecret,
  SECRET_PREFIX,
  SecretFormatError,
} from './secrets.ts';
export type { SigningKey, WebhookBody, WebhookHeaders, WebhookHeadersInput } from './standard-webhooks.ts';
export { sign, signatureHeader, webhookHeaders } from './standard-webhooks.ts';
export type {
  Examination,
  HeaderRecord,
  HeadersLike,
  VerificationErrorCode,
  VerifyOptions,
  VerifySecrets,
} from './verification.ts';
export { DEFAULT_TOLERANCE_SEC, examine, verify, WebhookVerificationError } from './verification.ts';
