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
export type {
  HeaderRecord,
  HeadersLike,
  SigningKey,
  VerificationErrorCode,
  VerifyOptions,
  VerifySecrets,
  WebhookBody,
  WebhookHeaders,
  WebhookHeadersInput,
} from './standard-webhooks.ts';
export {
  sign,
  signatureHeader,
  verify,
  WebhookVerificationError,
  webhookHeaders,
} from './standard-webhooks.ts';
