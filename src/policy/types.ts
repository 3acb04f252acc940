/**
 * The vocabulary of the retry policy. Everything in policy/ is pure: no I/O, no
 * Date.now(), no Math.random(). Instants and durations are milliseconds.
 */

/** Ways a request can fail before any HTTP status arrives. */
export const NETWORK_FAILURE_KINDS = [
  'timeout', // the total request deadline passed (slow receiver, trickled body)
  'connect_timeout', // TCP/TLS handshake did not finish in time
  'connection_refused',
  'connection_reset', // reset or closed mid-request or mid-response
  'dns', // name did not resolve
  'tls', // certificate or handshake error
  'other', // any other socket-level error
] as const;
export type NetworkFailureKind = (typeof NETWORK_FAILURE_KINDS)[number];

export type ResponseHeaders = Readonly<Record<string, string | readonly string[] | undefined>>;

/** What happened when one attempt was made. */
export type Outcome =
  | { readonly kind: 'response'; readonly status: number; readonly headers?: ResponseHeaders }
  | {
      readonly kind: 'network';
      readonly failure: NetworkFailureKind;
      readonly message?: string;
      /** A status and headers that arrived before the failure (a body cut off or too slow). */
      readonly answered?: { readonly status: number; readonly headers?: ResponseHeaders };
    }
  /** Courier itself refused to send (the SSRF guard): permanent, the URL will not change by waiting. */
  | { readonly kind: 'refused'; readonly reason: string };

export type Verdict = 'success' | 'retry' | 'permanent';

export interface Classification {
  readonly verdict: Verdict;
  /** A sentence a human reads in the attempt log. */
  readonly reason: string;
  /** Whether this outcome extends the endpoint's permanent-failure streak (permanent class, and 404). */
  readonly countsTowardStreak: boolean;
}

/**
 * `strict` is the document's table. `lenient` retries every 4xx (as Svix and Convoy do) but
 * still counts the permanent-class ones toward the endpoint's failure streak.
 */
export type ClassifierMode = 'strict' | 'lenient';

export interface ClassifierPolicy {
  readonly mode: ClassifierMode;
  /** Per-status overrides, applied after the mode: e.g. `{ 404: 'permanent' }`. */
  readonly overrides?: Readonly<Record<number, Verdict>>;
}

export type JitterMode = 'equal' | 'full' | 'none';

export type BackoffPolicy =
  | {
      readonly kind: 'exponential';
      readonly baseMs: number;
      readonly capMs: number;
      readonly jitter: JitterMode;
    }
  | {
      /** Explicit delays: the n-th retry waits scheduleMs[n-1]; the last entry repeats. */
      readonly kind: 'schedule';
      readonly scheduleMs: readonly number[];
      readonly jitter: JitterMode;
    };

export interface RetryAfterPolicy {
  /** Statuses whose Retry-After header is honoured. */
  readonly statuses: readonly number[];
  /** Longest delay a Retry-After may impose; longer values are clamped to it. */
  readonly ceilingMs: number;
}

export interface GiveUpPolicy {
  /** Attempts (the first one included) after which a delivery expires. */
  readonly maxAttempts: number;
  /** How long after the first attempt a delivery may still be retried. */
  readonly windowMs: number;
}

export interface RetryPolicy {
  readonly classifier: ClassifierPolicy;
  readonly backoff: BackoffPolicy;
  readonly retryAfter: RetryAfterPolicy;
  readonly giveUp: GiveUpPolicy;
}

/** What the worker must do with a delivery after an attempt. */
export type Decision =
  | { readonly kind: 'delivered'; readonly classification: Classification }
  | {
      readonly kind: 'retry';
      readonly at: number;
      readonly delayMs: number;
      readonly reason: 'backoff' | 'retry_after';
      readonly detail: string;
      readonly classification: Classification;
      /**
       * An honoured Retry-After: no delivery to this endpoint is sent before then (its receiver
       * asked; Courier holds the endpoint, not only this delivery). Absent without one.
       */
      readonly holdEndpointUntil?: number;
    }
  | { readonly kind: 'failed'; readonly detail: string; readonly classification: Classification }
  | {
      readonly kind: 'expired';
      readonly reason: 'max_attempts' | 'deadline';
      readonly detail: string;
      readonly classification: Classification;
      /** As a retry's. */
      readonly holdEndpointUntil?: number;
    };

export interface DecisionInput {
  readonly outcome: Outcome;
  /** Attempts made so far, this one included (1 after the first attempt). */
  readonly attempts: number;
  /** When this delivery gives up; the engine fixes it at the first attempt (see giveUpAt()). */
  readonly giveUpAt: number;
  readonly policy: RetryPolicy;
  /** The instant the attempt finished (from the injected clock). */
  readonly now: number;
  /** Uniform in [0, 1) (from the injected random source). */
  readonly random: () => number;
}
