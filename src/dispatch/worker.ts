import type { Clock } from '../clock.ts';
import { type Logger, silentLogger } from '../logger.ts';
import type { Database } from '../store/db.ts';
import { type ClaimedDelivery, type ClaimResult, claim, UnusableClaim } from '../store/queries/claim.ts';
import type { Completion } from '../store/queries/complete.ts';
import { notifyWorkers } from '../store/queries/notify-workers.ts';
import { type Lease, release } from '../store/queries/unclaim.ts';
import { buildRequest, completionFor, markOvertaken, type Ready } from './attempt.ts';
import { COMPLETION_HURRY_MS, COMPLETION_LINGER_MS, Linger, needsSlotsBack } from './completion-linger.ts';
import { CompletionWriter } from './completion-writer.ts';
import { HeldSlots } from './held-slots.ts';
import { HostHolds } from './host-holds.ts';
import { Housekeeping } from './housekeeping.ts';
import { OwnFailures } from './own-failures.ts';
import { SendLag } from './send-lag.ts';
import { Wakeups } from './wakeups.ts';
import { WorkLostAtShutdown } from './work-lost.ts';
import {
  DEFAULT_BATCH_SIZE,
  DEFAULT_CONCURRENCY,
  type WorkerOptions,
  workerOwnerId,
} from './worker-options.ts';

const COMPLETION_BATCH = 500;

/** How soon to look again at work that is due but was locked when the claim passed it. */
const LOCKED_RETRY_MS = 10;

/** Outcomes not yet written beyond which the loop claims nothing more (their writes failing). */
const UNWRITTEN_LIMIT = 4 * COMPLETION_BATCH;

/** A request abandoned at its deadline may still busy its receiver: its slot stays taken this much longer. */
const ABANDONED_REQUEST_GRACE_MS = 250;

/**
 * Claims due deliveries, sends them, and records what the policy decided. No retry logic lives
 * here: decide() chooses, the store applies. The worker's own failures (exceptions, database
 * errors, shutdown) count no attempt: the deliveries go back untouched (own-failures.ts).
 */
export class Worker {
  readonly owner: string;
  private readonly db: Database;
  private readonly clock: Clock;
  private readonly log: Logger;
  private readonly batchSize: number;
  private readonly concurrency: number;
  private readonly leaseMs: number;
  private readonly wakeups: Wakeups;
  private readonly housekeeping: Housekeeping;

  private running = false;
  private stopped = false;
  /** Completions and give-backs dropped at shutdown, the database refusing them (stop() reports it). */
  private lostAtShutdown = 0;
  private loopDone: Promise<void> = Promise.resolve();
  /** Deliveries being sent, with their claims' leases. */
  private readonly sending = new Map<number, number>();
  private completions: Completion[] = [];
  private releases: Lease[] = [];
  private flushing: Promise<void> | null = null;
  /** The wait of the first completion after a quiet spell for others to share its write. */
  private readonly linger = new Linger();
  private readonly held = new HeldSlots();
  private readonly hostHolds: HostHolds;
  /** Deliveries whose completion is being written now (see dispatch). */
  private readonly completing = new Set<number>();
  /** The loop waits for requests to finish before it claims again (this process's concurrency). */
  private waitingForRoom = false;
  /** Deliveries given back because they could not leave soon enough after their claim (send-lag.ts). */
  lateReleases = 0;
  private readonly sendLag = new SendLag();
  private readonly ownFailures = new OwnFailures();
  private readonly writer: CompletionWriter;

  constructor(private readonly options: WorkerOptions) {
    this.db = options.db;
    this.clock = options.clock;
    this.log = options.logger ?? silentLogger;
    this.owner = options.owner ?? workerOwnerId();
    this.batchSize = options.batchSize ?? DEFAULT_BATCH_SIZE;
    this.concurrency = options.concurrency ?? DEFAULT_CONCURRENCY;
    this.leaseMs = options.leaseMs ?? 60_000;
    this.wakeups = new Wakeups(this.db, this.clock, this.log, options.maxIdleMs ?? 30_000, () => {
      void options.operatorRelay?.run();
    });
    this.hostHolds = new HostHolds(this.held, this.db, this.clock, this.log, options.maxInFlightPerHost ?? 0);
    this.writer = new CompletionWriter(
      this.db,
      this.owner,
      this.clock,
      this.log,
      options.pauseAfter ?? 100,
      options.operatorRelay,
      options.disableFailingAfterMs,
    );
    this.housekeeping = new Housekeeping(
      this.db,
      this.clock,
      this.log,
      () => this.wakeups.signal(),
      options.retentionMs,
      options.operatorRelay,
    );
  }

  get inFlight(): number {
    return this.sending.size;
  }

  /** Outcomes and give-backs not yet written: grows while the database refuses the writes. */
  get unwritten(): number {
    return this.completions.length + this.releases.length;
  }

  /** One claim → send → complete round; for tests on virtual time and for simulations. */
  async runOnce(limit = this.batchSize): Promise<number> {
    const { deliveries } = await this.claim(limit).catch(async (error: unknown) => {
      await this.drain(); // what the claim gave back
      throw error;
    });
    await Promise.all(this.dispatch(deliveries));
    await this.drain();
    return deliveries.length;
  }

  async start(): Promise<void> {
    if (this.running) return;
    this.running = true;
    await this.wakeups.start();
    await this.housekeeping.start(this.options.reapIntervalMs ?? Math.max(1_000, this.leaseMs / 4));
    this.loopDone = this.loop();
  }

  /**
   * Graceful stop: claim nothing more, let requests in flight finish until graceMs, then give the
   * rest back without counting an attempt, and write every completion. A graceMs shorter than the
   * request timeout may give back a request still open at the receiver (sent again at once).
   * Rejects with WorkLostAtShutdown, once stopped, when outcomes could not be written.
   */
  async stop(graceMs = 10_000): Promise<void> {
    this.running = false;
    const housekeeping = this.housekeeping.stop();
    // A claim loop backing off after failures would otherwise sleep out its pause (up to 5 s).
    this.wakeups.halt();
    await this.loopDone;
    await housekeeping;
    const deadline = Date.now() + graceMs;
    while (this.sending.size > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    if (this.sending.size > 0) {
      this.log.warn({ deliveries: this.sending.size }, 'shutdown deadline: unfinished deliveries given back');
      this.giveBack(...Array.from(this.sending, ([id, leaseUntil]) => ({ id, leaseUntil })));
      this.sending.clear();
    }
    this.stopped = true;
    await this.drain();
    // Halted, its completions woke no one: what they freed is the other workers', not their idle timer's.
    await notifyWorkers(this.db).catch((err) => this.log.warn({ err }, 'could not wake the workers at stop'));
    // What the last completions recorded, before the caller closes the database.
    await this.options.operatorRelay?.run();
    await this.wakeups.stop();
    if (this.lostAtShutdown > 0) throw new WorkLostAtShutdown(this.lostAtShutdown);
  }

  private async loop(): Promise<void> {
    let claimFailures = 0;
    while (this.running) {
      const room = this.concurrency - this.sending.size;
      // Unwritten outcomes hold back claims too: while their writes fail, sending on piles them up.
      if (
        room < Math.min(this.batchSize, Math.ceil(this.concurrency / 4)) ||
        this.unwritten > UNWRITTEN_LIMIT
      ) {
        this.waitingForRoom = true;
        await this.wakeups.wait();
        this.waitingForRoom = false;
        continue;
      }
      const pause = this.ownFailures.pauseMs();
      if (pause > 0) {
        await this.wakeups.sleep(pause);
        if (!this.running) break;
      }
      this.wakeups.clear();
      let claimed: ClaimResult;
      try {
        claimed = await this.claim(Math.min(room, this.batchSize));
        claimFailures = 0;
      } catch (error) {
        claimFailures++;
        this.options.metrics?.databaseError('claim');
        // Capped at 5 s: after an outage, delivery resumes within 5 s of the database.
        const delay = Math.min(5_000, 100 * 2 ** Math.min(claimFailures, 9));
        // Power-of-two failure counts only: an outage of hours logs a few dozen lines, not millions.
        if ((claimFailures & (claimFailures - 1)) === 0) {
          this.log.error({ err: error, failures: claimFailures, retryInMs: delay }, 'claim failed');
        }
        await this.wakeups.sleep(delay);
        continue;
      }
      const { deliveries, nextDueAt } = claimed;
      this.dispatch(deliveries);
      // Work due now is left when the batch filled up or an endpoint was held by another
      // transaction (a completion, a publish, another worker's claim): a claim that found work
      // looks again at once, one that found none after a short timer rather than in a hot loop.
      // Otherwise sleep until work is announced (a NOTIFY, a completion that freed capacity,
      // deliveries given back) or falls due.
      const wait = nextDueAt === null ? undefined : nextDueAt - this.clock.now();
      if (wait !== undefined && wait <= 0 && deliveries.length > 0) continue;
      await this.wakeups.wait(wait === undefined ? undefined : Math.max(wait, LOCKED_RETRY_MS));
    }
  }

  private async claim(limit: number): Promise<ClaimResult> {
    const now = this.clock.now();
    let claimed: ClaimResult;
    try {
      claimed = await claim(this.db, {
        owner: this.owner,
        now,
        leaseMs: this.leaseMs,
        limit,
        hostCap: this.options.maxInFlightPerHost ?? 0,
      });
    } catch (error) {
      if (error instanceof UnusableClaim) this.giveBack(...error.leases.filter((l) => this.ours(l.id)));
      throw error;
    }
    this.sendLag.claimed(this.clock.now() - now);
    // An endpoint whose secrets cannot be opened fails alone, as in prepare(); the rest goes out.
    for (const { error, ...lease } of claimed.unreadable)
      if (this.ours(lease.id)) this.failedOn(lease, error, false);
    // Past its payload's retention: not sent but given back, which fails it ("payload expired").
    if (claimed.expired.length > 0) this.giveBack(...claimed.expired.filter((l) => this.ours(l.id)));
    for (const { endpointId, count, error: err } of claimed.skippedSecrets)
      this.log.warn({ endpointId, err }, `signing without ${count} earlier secrets it cannot open`);
    return claimed;
  }

  /** As dispatch() judges: one still ours from an earlier claim keeps its open request and lease. */
  private ours(deliveryId: number): boolean {
    return !this.held.has(deliveryId) || this.beingLetGo(deliveryId);
  }

  /**
   * Signs every delivery of a claim, then sends them. One signature after another keeps OpenSSL's
   * code and tables in cache: interleaved with the sends' socket writes, each HMAC cost the worker
   * about 7 µs instead of 2-3 (docs/performance-history.md, nineteenth session).
   */
  private dispatch(deliveries: readonly ClaimedDelivery[]): Promise<void>[] {
    const ready: Ready[] = [];
    for (const delivery of deliveries) {
      const prepared = this.prepare(delivery);
      if (prepared) ready.push(prepared);
    }
    return ready.map((r) => this.send(r));
  }

  /**
   * Takes a claimed delivery's slot and builds its signed request; null if it is not to be sent.
   * The send-lag check comes before each signature, so the time spent signing the claim counts
   * (200 deliveries of 1 MiB take about 0.1 s): what is prepared leaves at most one signature
   * after its last check passed, and signing alone never holds back a claim's first delivery.
   */
  private prepare(delivery: ClaimedDelivery): Ready | null {
    if (this.held.has(delivery.id)) {
      // Claimed again while still ours. Let go in the database (given back, or completed as due
      // at once) with this claim's answer read first (two connections, either order): give it
      // back again, or it waits out this lease unsent. Else its lease ran out in a database outage:
      // its request is open or its outcome unwritten, and will be written under this lease; sending
      // it again would duplicate the request and the attempt row, and free its slot twice; unless
      // that outcome was overtaken meanwhile: it becomes history, and this claim goes back.
      if (this.beingLetGo(delivery.id) || markOvertaken(this.completions, delivery)) this.giveBack(delivery);
      return null;
    }
    this.sending.set(delivery.id, delivery.leaseUntil);
    this.held.take(delivery.id, delivery.endpointId);
    try {
      const now = this.clock.now();
      if (this.sendLag.tooLate(now - delivery.claimedAt)) {
        this.lateReleases++;
        this.giveBack(delivery);
        this.done(delivery.id);
        return null;
      }
      const policy = this.options.policies.resolve(delivery.appPolicy, delivery.endpointPolicy);
      return { delivery, policy, request: buildRequest(delivery, now) };
    } catch (error) {
      this.failedOn(delivery, error);
      this.done(delivery.id);
      return null;
    }
  }

  private async send({ delivery, policy, request }: Ready): Promise<void> {
    try {
      const result = await this.options.sender.send(request);
      if (result.outcome.kind === 'network' && result.outcome.failure === 'timeout') {
        await new Promise((resolve) => setTimeout(resolve, ABANDONED_REQUEST_GRACE_MS));
      }
      if (!this.sending.has(delivery.id)) return; // released at shutdown: no longer ours to record
      const completion = completionFor(delivery, result, policy, this.clock, this.options.random);
      this.completions.push(completion);
      this.options.metrics?.attempted(completion, delivery.endpointId);
      this.flushSoon();
      if (needsSlotsBack(this.held.count(delivery.endpointId), delivery.maxInFlight)) {
        this.linger.hurry(COMPLETION_HURRY_MS);
      }
      this.ownFailures.succeeded(delivery.id);
    } catch (error) {
      this.failedOn(delivery, error);
    } finally {
      this.done(delivery.id);
    }
  }

  /** The worker's own failure, not the receiver's: no attempt counted (own-failures.ts). */
  private failedOn(lease: Lease, error: unknown, paces = true): void {
    const delayMs = this.ownFailures.failed(lease.id, paces);
    this.options.metrics?.ownFailure();
    const what =
      delayMs > 0
        ? `this delivery again; giving it back due in ${delayMs / 1000} s`
        : 'a delivery; giving it back';
    this.log.error({ err: error, deliveryId: lease.id }, `worker failed on ${what}`);
    this.giveBack(delayMs > 0 ? { ...lease, dueAt: this.clock.now() + delayMs } : lease);
  }

  /** No longer sending: room for the loop to claim more. */
  private done(deliveryId: number): void {
    this.sending.delete(deliveryId);
    if (this.waitingForRoom) this.wakeups.signal();
  }

  /** Its release is queued or being written, or its completion being written: maybe let go already. */
  private beingLetGo(deliveryId: number): boolean {
    return this.releases.some((l) => l.id === deliveryId) || this.completing.has(deliveryId);
  }

  /** Deliveries due again at once (or at their dueAt), untouched: written without the linger's full wait. */
  private giveBack(...leases: Lease[]): void {
    this.releases.push(...leases.map(({ id, leaseUntil, dueAt }) => ({ id, leaseUntil, dueAt })));
    this.flushSoon();
    this.linger.hurry(COMPLETION_HURRY_MS);
  }

  private flushSoon(): void {
    this.flushing ??= this.flush().finally(() => {
      this.flushing = null;
    });
  }

  private async drain(): Promise<void> {
    while (this.flushing || this.completions.length > 0 || this.releases.length > 0) {
      this.flushSoon();
      this.linger.hurry(0);
      await this.flushing;
    }
  }

  /**
   * Writes completions, then give-backs, in batches; retried until the database takes them. A
   * completion whose write failed is written under a later claim of its delivery when its lease
   * ran out meanwhile: a give-back of that claim waits for it, or it would be written to nothing.
   */
  private async flush(): Promise<void> {
    await this.linger.wait(this.options.completionLingerMs ?? COMPLETION_LINGER_MS);
    let failures = 0;
    while (this.completions.length > 0 || this.releases.length > 0) {
      const batch = this.completions.slice(0, COMPLETION_BATCH);
      try {
        if (batch.length > 0) {
          for (const c of batch) this.completing.add(c.deliveryId);
          const outcome = await this.writer.write(batch).finally(() => this.completing.clear());
          this.completions.splice(0, batch.length);
          const unheld = await this.hostHolds.free(batch.map((c) => c.deliveryId));
          // Capacity freed for due work, or a retry scheduled that the idle timer does not know of
          // yet: claim again (a claim that finds nothing looks up the next due time).
          const { claimable, wakeAt } = outcome;
          if (unheld || claimable || this.waitingForRoom || batch.some((c) => c.state === 'pending')) {
            this.wakeups.signal();
          }
          if (wakeAt !== null) this.wakeups.signalAt(wakeAt);
          await this.writer.settle(outcome);
        }
        const queued = this.releases.length > 0 ? new Set(this.completions.map((c) => c.deliveryId)) : null;
        const releasing = this.releases.filter((l) => !queued?.has(l.id));
        if (releasing.length > 0) {
          const { busy } = await release(this.db, this.owner, releasing, this.clock.now());
          // One whose row another transaction holds (a resend, an expunge) stays queued, until its
          // lease has run out: the reaper takes it back then.
          const done = releasing.filter((l) => !busy.includes(l.id) || l.leaseUntil <= this.clock.now());
          this.releases = this.releases.filter((l) => !done.includes(l));
          await this.hostHolds.free(done.map((l) => l.id));
          this.wakeups.signal(); // given back: due again at once
          if (busy.length > 0) await new Promise((resolve) => setTimeout(resolve, LOCKED_RETRY_MS));
        }
        failures = 0;
      } catch (error) {
        failures++;
        this.options.metrics?.databaseError('write');
        for (const c of batch) c.rewrite = true; // it may have committed: the next write looks first
        if (this.stopped && failures > 5) {
          this.log.error(
            { err: error, lost: this.completions.length },
            'giving up writing completions at shutdown',
          );
          this.lostAtShutdown += this.completions.length + this.releases.length;
          this.completions = [];
          this.releases = [];
          this.held.clear();
          return;
        }
        if ((failures & (failures - 1)) === 0) {
          this.log.error({ err: error, failures }, 'writing completions failed; retrying');
        }
        await new Promise((resolve) =>
          setTimeout(resolve, Math.min(10_000, 50 * 2 ** Math.min(failures, 8))),
        );
      }
    }
  }
}
