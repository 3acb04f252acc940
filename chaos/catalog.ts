/**
 * The endpoint scripts of the chaos run: what each receiver answers to the n-th request it sees for
 * one webhook-id, and what the retry policy then dictates. Shared by the receiver processes (which
 * act them out) and the runner (which checks the outcome).
 */

export type TerminalState = 'delivered' | 'failed' | 'expired';

/** What a receiver does with one request. */
export type Action =
  | { kind: 'respond'; status: number; delayMs?: number; retryAfter?: 'seconds' | 'date'; endless?: boolean }
  /** Status line and part of a body, then the socket is destroyed. */
  | { kind: 'reset' };

/** Time context of a time-based script: ms since the run's epoch, and whether faults have stopped. */
export interface Moment {
  elapsedMs: number;
  calm: boolean;
  phaseMs: number;
}

export interface Kind {
  name: string;
  script(n: number, at: Moment): Action;
  /** The terminal state and attempt count the policy dictates, for scripts that do not depend on time. */
  expect?: (maxAttempts: number) => { state: TerminalState; attempts: number };
  /** The server is closed then reopened on the same port (connection refused meanwhile). */
  down?: { periodMs: number; downMs: number };
  maxInFlight?: readonly [number, number];
  rateLimit?: readonly [number, number];
}

const ok: Action = { kind: 'respond', status: 200 };
const status = (code: number): Action => ({ kind: 'respond', status: code });
const delivered = (attempts: number) => () => ({ state: 'delivered' as const, attempts });

/** A 1.5 s burst of 500s every 12 s: shorter than the shortest possible 6-attempt schedule (2.5 s). */
const BURST = { periodMs: 12_000, burstMs: 1_500 };

/** In order: the first eight (the smoke run's) have no time-based faults and include a capped, rated one. */
export const KINDS: readonly Kind[] = [
  {
    name: 'capped-rated',
    script: () => ({ kind: 'respond', status: 200, delayMs: 80 }),
    expect: delivered(1),
    maxInFlight: [2, 5],
    rateLimit: [5, 20],
  },
  { name: 'flaky500', script: (n) => (n <= 2 ? status(500) : ok), expect: delivered(3) },
  {
    name: 'ra-seconds',
    script: (n) => (n === 1 ? { kind: 'respond', status: 429, retryAfter: 'seconds' } : ok),
    expect: delivered(2),
  },
  {
    name: 'ra-date',
    script: (n) => (n === 1 ? { kind: 'respond', status: 429, retryAfter: 'date' } : ok),
    expect: delivered(2),
  },
  { name: 'gone410', script: () => status(410), expect: () => ({ state: 'failed', attempts: 1 }) },
  {
    // Beyond the 2 s request timeout the first time.
    name: 'slow',
    script: (n) => (n === 1 ? { kind: 'respond', status: 200, delayMs: 3_000 } : ok),
    expect: delivered(2),
  },
  { name: 'reset', script: (n) => (n === 1 ? { kind: 'reset' } : ok), expect: delivered(2) },
  {
    name: 'endless',
    script: (n) => ({ kind: 'respond', status: n === 1 ? 503 : 200, endless: true }),
    expect: delivered(2),
  },
  { name: 'healthy', script: () => ok, expect: delivered(1) },
  { name: 'broken500', script: () => status(500), expect: (max) => ({ state: 'expired', attempts: max }) },
  {
    name: 'unprocessable',
    script: (n) => (n <= 2 ? status(502) : status(422)),
    expect: () => ({ state: 'failed', attempts: 3 }),
  },
  {
    name: 'capped',
    script: () => ({ kind: 'respond', status: 200, delayMs: 150 }),
    expect: delivered(1),
    maxInFlight: [2, 5],
  },
  { name: 'rated', script: () => ok, expect: delivered(1), rateLimit: [5, 20] },
  { name: 'down', script: () => ok, down: { periodMs: 25_000, downMs: 6_000 } },
  {
    name: 'burst500',
    script: (_n, at) =>
      !at.calm && (at.elapsedMs + at.phaseMs) % BURST.periodMs < BURST.burstMs ? status(500) : ok,
  },
  {
    name: 'ra-twice',
    script: (n) =>
      n === 1
        ? { kind: 'respond', status: 429, retryAfter: 'seconds' }
        : n === 2
          ? { kind: 'respond', status: 503, retryAfter: 'date' }
          : ok,
    expect: delivered(3),
  },
];

export interface EndpointPlan {
  index: number;
  name: string;
  kind: string;
  maxInFlight?: number;
  rateLimit?: number;
  phaseMs: number;
}

/** Deterministic from the seed, so a run can be reproduced. */
export function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export function kindOf(name: string): Kind {
  const kind = KINDS.find((k) => k.name === name);
  if (!kind) throw new Error(`unknown endpoint kind ${name}`);
  return kind;
}

export function planEndpoints(count: number, seed: number): EndpointPlan[] {
  const random = mulberry32(seed);
  const between = (range: readonly [number, number]) =>
    range[0] + Math.floor(random() * (range[1] - range[0] + 1));
  return Array.from({ length: count }, (_, index) => {
    const kind = KINDS[index % KINDS.length]!;
    return {
      index,
      name: `${kind.name}-${index}`,
      kind: kind.name,
      maxInFlight: kind.maxInFlight && between(kind.maxInFlight),
      rateLimit: kind.rateLimit && between(kind.rateLimit),
      phaseMs: Math.floor(random() * 25_000),
    };
  });
}

/** Statuses the documented classification calls permanent (strict mode). */
const PERMANENT = new Set([400, 401, 403, 410, 422]);

/** One counted attempt as the verdict sees it: an HTTP status, or a network failure. */
export type Outcome = number | 'network';

/**
 * The terminal state the documented policy dictates for a sequence of counted attempt outcomes, or
 * 'pending' when it allows more attempts. Independent of Courier's own decide().
 */
export function verdict(
  outcomes: readonly Outcome[],
  maxAttempts: number,
): TerminalState | 'pending' | 'attempts after the end' {
  for (let i = 0; i < outcomes.length; i++) {
    const o = outcomes[i]!;
    const last = i === outcomes.length - 1;
    const final =
      o !== 'network' && o >= 200 && o < 300
        ? 'delivered'
        : o !== 'network' && PERMANENT.has(o)
          ? 'failed'
          : i + 1 >= maxAttempts
            ? 'expired'
            : null;
    if (final) return last ? final : 'attempts after the end';
  }
  return 'pending';
}
