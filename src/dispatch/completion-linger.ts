/**
 * How long a completion waits before it is written, so that the completions of a quiet spell share
 * one transaction.
 *
 * Every completion transaction locks the queue rows of the endpoints it touches, and publishes
 * (which must bring next_due_at forward) and claims (which skip locked rows) meet those locks. At
 * 1,000 messages/s a 2 ms wait gave about one completion transaction per four messages. With 10 ms,
 * p50 publish-to-receiver latency was lower in 12 of 16 alternating pairs (medians 4.2 against
 * 5.1 ms in one series, 6.3 against 6.5 ms in a slow phase of the host) and PostgreSQL spent 9 %
 * less CPU per message (docs/performance-history.md, twelfth session). The delivery itself is never
 * delayed: only the bookkeeping after its response.
 *
 * But a waiting completion keeps its endpoint's in-flight slot taken, so an endpoint this worker
 * holds near its cap would lose throughput to the wait. Its completions are written within
 * COMPLETION_HURRY_MS, as every completion was before.
 */
export const COMPLETION_LINGER_MS = 10;
export const COMPLETION_HURRY_MS = 2;

/**
 * Whether an endpoint needs its slots back soon: this worker holds (sending, or sent with the
 * completion not yet written) half its cap or more. Other workers may hold the rest.
 */
export function needsSlotsBack(held: number, maxInFlight: number): boolean {
  return held >= Math.ceil(maxInFlight / 2);
}

/** A wait that can be cut short. */
export class Linger {
  private timer: NodeJS.Timeout | undefined;
  private end: (() => void) | null = null;
  private endsAt = 0;

  wait(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const end = () => {
        clearTimeout(this.timer);
        if (this.end === end) this.end = null;
        resolve();
      };
      this.end = end;
      this.endsAt = performance.now() + ms;
      this.timer = setTimeout(end, ms);
    });
  }

  /** Ends the wait in progress within ms, never later than it would have ended anyway. */
  hurry(ms: number): void {
    const end = this.end;
    if (!end) return;
    const at = performance.now() + ms;
    if (at >= this.endsAt) return;
    clearTimeout(this.timer);
    this.endsAt = at;
    if (ms <= 0) end();
    else this.timer = setTimeout(end, ms);
  }
}
