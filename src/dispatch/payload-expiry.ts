import type { Logger } from '../logger.ts';
import { type Database, DatabaseUnavailableError } from '../store/db.ts';
import { expireDuePayload } from '../store/queries/expunge.ts';
import { duePayloads, type ExpiryCursor } from '../store/queries/payload-expiry.ts';

/** Messages looked at per statement; each is expunged in a short transaction of its own. */
export const EXPIRY_BATCH = 100;
/** Statements per sweep: bounds one sweep's work however much is due. */
export const EXPIRY_STATEMENTS_PER_SWEEP = 20;

export interface ExpirySweep {
  /** Payloads expunged. */
  expunged: number;
  /** Due, but an attempt was under way: the rest failed, the bytes kept for it until a later sweep. */
  inFlight: number;
  /** Due, but its expunge failed (the first error kept): passed by, so that it holds up no other. */
  failed: number;
  error?: unknown;
}

/**
 * Expunges the payloads whose retention (payloadRetentionPeriod or payloadRetentionHours) has run
 * out, as DELETE …/msg/{msg}/content does: what was still to be sent fails as "payload expired". A
 * message with an attempt under way keeps its bytes for that attempt, until a sweep after it. Every
 * worker sweeps; each due message is taken by one of them (expireDuePayload). Each sweep starts
 * from the soonest due: the ones kept for an attempt are few and brief (a lease at most).
 */
export class PayloadExpirySweeper {
  /** Housekeeping runs on an interval: a sweep slower than the interval must not overlap the next. */
  private sweeping = false;

  constructor(
    private readonly db: Database,
    private readonly batch = EXPIRY_BATCH,
    private readonly statements = EXPIRY_STATEMENTS_PER_SWEEP,
  ) {}

  async sweep(now: number): Promise<ExpirySweep> {
    const result: ExpirySweep = { expunged: 0, inFlight: 0, failed: 0 };
    if (this.sweeping) return result;
    this.sweeping = true;
    try {
      let after: ExpiryCursor | null = null;
      for (let i = 0; i < this.statements; i++) {
        const due = await duePayloads(this.db, { now, after, limit: this.batch });
        for (const message of due) {
          try {
            const outcome = await this.db.transaction((tx) =>
              expireDuePayload(tx, { messageId: message.id, now }),
            );
            if (outcome === 'expunged') result.expunged++;
            else if (outcome === 'in_flight') result.inFlight++;
          } catch (error) {
            // The database away ends the sweep; one message's own trouble must not stop the rest.
            if (error instanceof DatabaseUnavailableError) throw error;
            result.failed++;
            result.error ??= error;
          }
        }
        if (due.length < this.batch) break;
        after = due[due.length - 1]!;
      }
      return result;
    } finally {
      this.sweeping = false;
    }
  }

  /** A sweep from the housekeeping timer: what it expunged logged at info, a failure at warn, never thrown. */
  async sweepLogged(now: number, log: Logger): Promise<void> {
    try {
      const { error, ...swept } = await this.sweep(now);
      if (swept.expunged > 0) log.info(swept, 'expunged payloads past their retention');
      if (swept.failed > 0)
        log.warn(
          { err: error, failed: swept.failed },
          'could not expunge some payloads past their retention',
        );
    } catch (error) {
      // A sweep that keeps failing keeps payloads past the retention their publishers asked for.
      log.warn({ err: error }, 'payload expiry sweep failed');
    }
  }
}
