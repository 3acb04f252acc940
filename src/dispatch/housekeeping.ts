import type { Clock } from '../clock.ts';
import type { Logger } from '../logger.ts';
import type { Database } from '../store/db.ts';
import { analyzeIfStale } from '../store/queries/maintenance.ts';
import { purgeExpiredSecrets } from '../store/queries/secret-purge.ts';
import { reapExpiredLeases } from '../store/queries/unclaim.ts';
import type { OperatorRelay } from './operator-webhook.ts';
import { PayloadExpirySweeper } from './payload-expiry.ts';
import { RetentionSweeper } from './retention.ts';

/** Expired signing secrets deleted per statement, and statements per tick (the rest wait for the next). */
const SECRET_PURGE_BATCH = 1_000;
const SECRET_PURGE_STATEMENTS = 10;

/**
 * A worker's chores on a timer: take over deliveries whose lease expired (a crashed worker's),
 * keep planner statistics fresh, delete history past the retention period and payloads past
 * the retention their messages asked for, delete signing secrets past their expiry, send
 * operational events a crash left unsent. None of it is
 * on the delivery path; a failure is logged and tried again at the next tick.
 */
export class Housekeeping {
  readonly #retention: RetentionSweeper | null;
  readonly #payloadExpiry: PayloadExpirySweeper;
  #timer: NodeJS.Timeout | undefined;
  /** Ticks under way: a stop waits for them, so that no sweep outlives its worker's database. */
  readonly #ticking = new Set<Promise<void>>();

  constructor(
    private readonly db: Database,
    private readonly clock: Clock,
    private readonly log: Logger,
    /** Called when leases were taken over: their deliveries are due again. */
    private readonly onTakenOver: () => void,
    retentionMs: number | null | undefined,
    /** Sends what a crash left unsent to the operator webhook; the worker runs it as it records events. */
    private readonly operatorRelay?: OperatorRelay,
  ) {
    this.#retention = retentionMs == null ? null : new RetentionSweeper(db, retentionMs);
    this.#payloadExpiry = new PayloadExpirySweeper(db);
  }

  /** Takes over expired leases at once, then does every chore each intervalMs. */
  async start(intervalMs: number): Promise<void> {
    await this.reap();
    // Retention waits for the first tick: a start-up is not held up by deleting a backlog of history.
    this.#timer = setInterval(() => {
      const tick = this.tick().finally(() => this.#ticking.delete(tick));
      this.#ticking.add(tick);
    }, intervalMs);
    this.#timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.#timer);
    await Promise.all(this.#ticking);
  }

  private async tick(): Promise<void> {
    await this.reap();
    await this.#retention?.sweepLogged(this.clock.now(), this.log);
    await this.#payloadExpiry.sweepLogged(this.clock.now(), this.log);
    await this.purgeSecrets();
    await this.operatorRelay?.run();
  }

  private async purgeSecrets(): Promise<void> {
    let purged = 0;
    try {
      for (let i = 0; i < SECRET_PURGE_STATEMENTS; i++) {
        const n = await purgeExpiredSecrets(this.db, this.clock.now(), SECRET_PURGE_BATCH);
        purged += n;
        if (n < SECRET_PURGE_BATCH) break;
      }
    } catch (error) {
      this.log.warn({ err: error }, 'deleting expired signing secrets failed');
    }
    if (purged > 0) this.log.info({ secrets: purged }, 'deleted signing secrets past their expiry');
  }

  private async reap(): Promise<void> {
    try {
      const taken = await reapExpiredLeases(this.db, this.clock.now());
      if (taken > 0) {
        this.onTakenOver();
        this.log.warn({ deliveries: taken }, 'took over deliveries whose lease expired');
      }
    } catch (error) {
      // While it fails, a crashed worker's deliveries stay stuck, and their leases hold back the
      // resend, expunge and retention of their messages.
      this.log.warn({ err: error }, 'taking over expired leases failed');
      return;
    }
    try {
      const analysed = await analyzeIfStale(this.db);
      if (analysed.length > 0) this.log.debug({ tables: analysed }, 'refreshed planner statistics');
    } catch (error) {
      this.log.debug({ err: error }, 'refreshing planner statistics failed');
    }
  }
}
