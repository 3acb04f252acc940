/**
 * One shared timer for every in-flight request instead of one timer each. All requests get the same
 * timeout, so insertion order is deadline order: a sweep expires from the oldest and stops at the
 * first one still in time. Deadlines fire up to one tick late.
 */
export interface Expiring {
  /** performance.now() instant after which expire() is due. */
  readonly deadline: number;
  expire(): void;
}

export class DeadlineSweeper {
  readonly #pending = new Set<Expiring>();
  readonly #tickMs: number;
  #timer: NodeJS.Timeout | undefined;

  constructor(readonly timeoutMs: number) {
    this.#tickMs = Math.min(250, Math.max(5, Math.floor(timeoutMs / 20)));
  }

  add(item: Expiring): void {
    this.#pending.add(item);
    this.#timer ??= setInterval(this.#sweep, this.#tickMs);
  }

  delete(item: Expiring): void {
    this.#pending.delete(item);
  }

  readonly #sweep = (): void => {
    const now = performance.now();
    for (const item of this.#pending) {
      if (item.deadline > now) break;
      this.#pending.delete(item);
      item.expire();
    }
    // Idle: stop ticking until the next add().
    if (this.#pending.size === 0) {
      clearInterval(this.#timer);
      this.#timer = undefined;
    }
  };
}
