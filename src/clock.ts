/**
 * Time is injected everywhere a decision is made, so tests and simulations run on
 * virtual time. All instants are milliseconds since the Unix epoch.
 */
export interface Clock {
  now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };

/** A clock that only moves when told to: for tests and simulations. */
export class ManualClock implements Clock {
  constructor(private current: number = Date.UTC(2026, 0, 1)) {}

  now(): number {
    return this.current;
  }

  advance(ms: number): void {
    if (ms < 0) throw new RangeError('a clock cannot go backwards');
    this.current += ms;
  }

  set(instant: number): void {
    this.current = instant;
  }
}
