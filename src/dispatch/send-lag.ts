/**
 * The rate limit counts claims in 100 ms slots over a 1.2 s window, so two requests a full window
 * apart were claimed more than 1.1 s apart, and stay a second apart at the receiver as long as
 * their lags (claim start to request) differ by at most 100 ms. A delay every claim has (a
 * database far away, large payloads) shifts all requests alike and keeps their spacing, so the lag
 * counts beyond the usual duration of a claim (a moving average, CLAIM_DURATION_WEIGHT); a request
 * that would leave later than that (the worker or the database stalled) is given back uncounted.
 * Counted from the claim's start, large payloads or a distant database made every request late:
 * the worker gave back every claim and sent nothing.
 *
 * The average includes the claim being judged, so a claim up to 200 ms slower than the ones before
 * still sends, and two requests can then reach the receiver up to 100 ms less than a second apart.
 * Judged against the shortest of the recent claims instead (exact), one quick empty claim after an
 * idle spell had the next sixteen claims of large payloads given back whole.
 */
export const MAX_SEND_LAG_MS = 100;

/** The weight of the latest claim in the moving average of claim durations. */
const CLAIM_DURATION_WEIGHT = 0.5;

/** Judges whether a claimed delivery may still leave, from how long claims take. */
export class SendLag {
  /** A moving average of claim durations, ms on the injected clock. */
  #usualMs = 0;

  /** A claim took `ms`; its deliveries are judged with it counted in. */
  claimed(ms: number): void {
    this.#usualMs += (ms - this.#usualMs) * CLAIM_DURATION_WEIGHT;
  }

  /** Whether a request `lagMs` after its claim's start would leave too late for the rate limit. */
  tooLate(lagMs: number): boolean {
    return lagMs > MAX_SEND_LAG_MS + this.#usualMs;
  }
}
