/**
 * The rate limit counts claims in 100 ms slots over a 1.2 s window, so two requests a full window
 * apart were claimed more than 1.1 s apart, and stay a second apart at the receiver as long as
 * their lags (claim start to request) differ by at most 100 ms. A delay every claim has (a
 * database far away, large payloads) shifts all requests alike and keeps their spacing, so the lag
 * counts beyond the shortest of the last CLAIM_HISTORY claims, the current one left out: a claim
 * slower than that by more than 100 ms (the worker or the database stalled) has its requests given
 * back uncounted. Counted from the claim's start, large payloads or a distant database made every
 * request late: the worker gave back every claim and sent nothing. (A moving average that included
 * the stalled claim itself let a request leave up to 200 ms late, two requests 900 ms apart.)
 */
export const MAX_SEND_LAG_MS = 100;

/** How many recent claims' durations the send lag is measured against. */
const CLAIM_HISTORY = 16;

/** Judges whether a claimed delivery may still leave, from how long recent claims took. */
export class SendLag {
  /** The last CLAIM_HISTORY claims' durations, ms on the injected clock, oldest first. */
  readonly #durations: number[] = [];
  /** The shortest of them before the latest claim: the lag every claim has. */
  #usualMs = 0;

  /** A claim took `ms`; its deliveries are judged against the claims before it. */
  claimed(ms: number): void {
    this.#usualMs = this.#durations.length > 0 ? Math.min(...this.#durations) : 0;
    this.#durations.push(ms);
    if (this.#durations.length > CLAIM_HISTORY) this.#durations.shift();
  }

  /** Whether a request `lagMs` after its claim's start would leave too late for the rate limit. */
  tooLate(lagMs: number): boolean {
    return lagMs > MAX_SEND_LAG_MS + this.#usualMs;
  }
}
