/** Deliveries remembered at most; past it the memory starts over (each then gets one more give-back). */
const MAX_TRACKED = 10_000;

/** A delivery failed on again is due after a minute, doubling to an hour, as the default backoff. */
const FIRST_DELAY_MS = 60_000;
const LONGEST_DELAY_MS = 3_600_000;

/**
 * The worker's own failures (a bug, a database error), which are not the receiver's: no attempt
 * is counted for them. In a row, on any deliveries, they pace the claim loop. On one delivery, the
 * first is given back due at once (another try may well work); from the second, due later, a
 * minute doubling to an hour: a delivery this worker cannot prepare or send would otherwise be
 * claimed, fail and be given back in a hot loop, an error line each time.
 */
export class OwnFailures {
  #inARow = 0;
  readonly #perDelivery = new Map<number, number>();

  /**
   * Counts a failure on this delivery; says in how long it is to be due again. `paces`: false for
   * a failure of one endpoint's own (a secret this process cannot open), which must not slow the
   * claims of every other endpoint.
   */
  failed(deliveryId: number, paces = true): number {
    if (paces) this.#inARow++;
    if (this.#perDelivery.size >= MAX_TRACKED && !this.#perDelivery.has(deliveryId)) {
      this.#perDelivery.clear();
    }
    const times = (this.#perDelivery.get(deliveryId) ?? 0) + 1;
    this.#perDelivery.set(deliveryId, times);
    return times === 1 ? 0 : Math.min(LONGEST_DELAY_MS, FIRST_DELAY_MS * 2 ** Math.min(times - 2, 6));
  }

  /** A request went out for this delivery, whatever its outcome. */
  succeeded(deliveryId: number): void {
    this.#inARow = 0;
    this.#perDelivery.delete(deliveryId);
  }

  /** How long the claim loop waits before claiming: none after a success, 100 ms doubling to 5 s. */
  pauseMs(): number {
    return this.#inARow === 0 ? 0 : Math.min(5_000, 50 * 2 ** Math.min(this.#inARow, 7));
  }
}
