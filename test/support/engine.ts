import { ManualClock, systemClock } from '../../src/clock.ts';
import { Sender } from '../../src/delivery/sender.ts';
import { SsrfGuard } from '../../src/delivery/ssrf-guard.ts';
import { PolicyResolver } from '../../src/dispatch/policy-resolver.ts';
import { Worker } from '../../src/dispatch/worker.ts';
import type { WorkerOptions } from '../../src/dispatch/worker-options.ts';
import type { PolicyOverrides } from '../../src/policy/index.ts';
import { seededRandom } from '../../src/random.ts';
import type { Database } from '../../src/store/db.ts';

/** A worker on virtual time, delivering to loopback receivers only. */
export function virtualWorker(
  db: Database,
  options: Partial<WorkerOptions> & {
    clock?: ManualClock;
    policy?: PolicyOverrides;
    requestTimeoutMs?: number;
  } = {},
) {
  const clock = options.clock ?? new ManualClock(Date.UTC(2026, 0, 1, 12));
  const sender = new Sender({
    guard: new SsrfGuard(['127.0.0.0/8']),
    clock,
    requestTimeoutMs: options.requestTimeoutMs ?? 2_000,
  });
  const worker = new Worker({
    db,
    sender,
    clock,
    random: seededRandom(42),
    policies: new PolicyResolver(options.policy),
    ...options,
  });
  return { clock, sender, worker };
}

/** A worker on the system clock, sending to loopback for real. */
export function runningWorker(db: Database, options: Partial<WorkerOptions> = {}) {
  const sender = new Sender({ guard: new SsrfGuard(['127.0.0.0/8']), clock: systemClock });
  const worker = new Worker({
    db,
    sender,
    clock: systemClock,
    random: seededRandom(7),
    policies: new PolicyResolver({}),
    ...options,
  });
  return { sender, worker };
}
