import { idsBefore } from '../ids.ts';
import type { Logger } from '../logger.ts';
import type { Queryable } from '../store/db.ts';
import { purgeMessages, purgeOperationalEvents } from '../store/queries/retention.ts';
import { purgeBackgroundTasks } from '../store/repos/background-tasks.ts';

/** Messages looked at per statement, at most: one short transaction each, never a long lock. */
export const PURGE_BATCH = 1000;
/**
 * Attempt and delivery rows one statement deletes at most (past its first message): the messages
 * it looks at follow from the rows per message the last one deleted (a fan-out to many endpoints
 * means fewer), and it stops within the budget where the fan-out grew meanwhile (migration 0026).
 */
export const PURGE_ROW_BUDGET = 20_000;
/** Messages the first statement looks at, before any fan-out is known. */
const FIRST_LIMIT = 100;
/** Statements per sweep: bounds one sweep's work however much is waiting. */
export const PURGE_STATEMENTS_PER_SWEEP = 20;

export interface SweepResult {
  messages: number;
  operationalEvents: number;
  /** Recover and replay tasks kept for reading back (migration 0032). */
  backgroundTasks: number;
}

/**
 * Deletes what has outlived the retention period, counted from each message's creation: the
 * message, its attempts and its deliveries, unless one of them is in flight or retrying (a
 * dead-lettered one goes with it, and so does one held for a paused endpoint: migration 0014 says
 * why). A bounded amount per sweep; a sweep that stops short goes on from there next time, so
 * messages that must stay are looked at once per pass through the range, not on every sweep.
 */
export class RetentionSweeper {
  private after = '';
  /** Messages the next statement looks at (PURGE_ROW_BUDGET). */
  private limit: number;
  /** Housekeeping runs on an interval: a sweep slower than the interval must not overlap the next. */
  private sweeping = false;

  constructor(
    private readonly db: Queryable,
    private readonly retentionMs: number,
    private readonly batch = PURGE_BATCH,
    private readonly statements = PURGE_STATEMENTS_PER_SWEEP,
    private readonly rowBudget = PURGE_ROW_BUDGET,
  ) {
    this.limit = Math.min(batch, FIRST_LIMIT);
  }

  async sweep(now: number): Promise<SweepResult> {
    if (this.sweeping) return { messages: 0, operationalEvents: 0, backgroundTasks: 0 };
    this.sweeping = true;
    try {
      return await this.purge(now);
    } finally {
      this.sweeping = false;
    }
  }

  /** A sweep from the housekeeping timer: what it deleted logged at info, a failure at warn, never thrown. */
  async sweepLogged(now: number, log: Logger): Promise<void> {
    try {
      const purged = await this.sweep(now);
      if (purged.messages + purged.operationalEvents + purged.backgroundTasks > 0) {
        log.info(purged, 'deleted history older than the retention period');
      }
    } catch (error) {
      // Not debug like the rest of housekeeping: a sweep that keeps failing lets storage grow unnoticed.
      log.warn({ err: error }, 'retention sweep failed');
    }
  }

  private async purge(now: number): Promise<SweepResult> {
    const cutoff = Math.max(0, now - this.retentionMs);
    const result: SweepResult = { messages: 0, operationalEvents: 0, backgroundTasks: 0 };
    const messagesBefore = idsBefore('msg', cutoff);
    for (let i = 0; i < this.statements; i++) {
      const limit = this.limit;
      const pass = await purgeMessages(this.db, {
        before: messagesBefore,
        after: this.after,
        limit,
        now,
        rowBudget: this.rowBudget,
      });
      result.messages += pass.purged;
      this.limit = nextLimit(limit, pass, this.rowBudget, this.batch);
      if (pass.scanned < limit) {
        this.after = '';
        break;
      }
      this.after = pass.lastId!;
    }
    result.operationalEvents = await this.purgeById((limit) =>
      purgeOperationalEvents(this.db, idsBefore('opev', cutoff), limit),
    );
    result.backgroundTasks = await this.purgeById((limit) =>
      purgeBackgroundTasks(this.db, idsBefore('qtask', cutoff), limit),
    );
    return result;
  }

  /** Rows with no history hanging off them, deleted by id range a batch per statement. */
  private async purgeById(purge: (limit: number) => Promise<number>): Promise<number> {
    let total = 0;
    for (let i = 0; i < this.statements; i++) {
      const purged = await purge(this.batch);
      total += purged;
      if (purged < this.batch) break;
    }
    return total;
  }
}

/**
 * Messages for the next statement: as many as the row budget holds at the rows per message just
 * deleted, between 1 and `batch`; twice as many when nothing was deleted to judge by.
 */
export function nextLimit(
  limit: number,
  pass: { purged: number; rowsDeleted: number },
  rowBudget: number,
  batch: number,
): number {
  if (pass.purged === 0 || pass.rowsDeleted === 0) return Math.min(batch, limit * 2);
  return Math.max(1, Math.min(batch, Math.floor(rowBudget / (pass.rowsDeleted / pass.purged))));
}
