export { networkFailureKind, outcomeForError } from './network-errors.ts';
export { receiverHost } from './receiver-host.ts';
export {
  DEFAULT_USER_AGENT,
  Sender,
  type SenderOptions,
  type SendRequest,
  type SendResult,
} from './sender.ts';
export {
  type AddressClass,
  ALLOW_ENV,
  type CheckResult,
  classifyAddress,
  guardedLookup,
  type Resolver,
  SSRF_REFUSED,
  SsrfGuard,
  SsrfRefusedError,
} from './ssrf-guard.ts';
