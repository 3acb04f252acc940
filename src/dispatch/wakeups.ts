import { randomUUID } from 'node:crypto';
import type { Clock } from '../clock.ts';
import type { Logger } from '../logger.ts';
import type { Database } from '../store/db.ts';
import { HEARING_CHECK, RELAY_NOTICE, sendHearingCheck } from '../store/queries/notify-workers.ts';

/** How long a worker waits to hear its own check notification (at its start, after a reconnect). */
export const HEARING_CHECK_MS = 5_000;

/**
 * What wakes an idle worker: a NOTIFY for new work, the timer for the next due delivery, or
 * its own requests finishing. No busy polling: an idle Courier sleeps until one of them fires.
 */
export class Wakeups {
  private signalled = false;
  private waiter: (() => void) | null = null;
  private sleeper: (() => void) | null = null;
  private unlisten: (() => Promise<void>) | null = null;
  private stopped = false;
  private due: { at: number; timer: NodeJS.Timeout } | null = null;
  private hearingCheck: { heard: (payload: string) => void; end: () => void } | null = null;
  /**
   * Whether this worker heard the notification it sent itself at its start, or at the latest
   * reconnect of its LISTEN connection: false when none came within HEARING_CHECK_MS (said in the
   * log), null when it did not check to the end (no LISTEN, the notification not sent, a reconnect
   * within the wait, or stopped first).
   */
  hearing: Promise<boolean | null> = Promise.resolve(null);

  constructor(
    private readonly db: Database,
    private readonly clock: Clock,
    private readonly log: Logger,
    private readonly maxIdleMs: number,
    /** Called for a notice that operational events wait (RELAY_NOTICE), which is no new work. */
    private readonly onRelayNotice: () => void = () => {},
  ) {}

  async start(): Promise<void> {
    try {
      const { rows } = await this.db.query<{ channel: string }>('select courier_channel() as channel');
      this.unlisten = await this.db.listen(
        rows[0]!.channel,
        (payload) => {
          if (payload === RELAY_NOTICE) this.onRelayNotice();
          else if (payload.startsWith(HEARING_CHECK)) this.hearingCheck?.heard(payload);
          else this.signal();
        },
        () => this.reconnected(),
      );
    } catch (error) {
      // Without LISTEN the worker still wakes on its timer; it keeps working, just less promptly.
      this.log.error({ err: error }, 'could not LISTEN for new work; falling back to the idle timer');
      return;
    }
    // Stopped while it started: nothing to check, and the database may be closing.
    if (!this.stopped) this.hearing = this.checkHearing();
  }

  /**
   * The LISTEN connection is made anew (after a loss, or a first attempt that failed): new work
   * notified meanwhile was missed, and the new connection may not hear (a pooler's address in
   * place of the server's): checked again.
   */
  private reconnected(): void {
    this.signal();
    if (!this.stopped) this.hearing = this.checkHearing();
  }

  /**
   * Listening is not hearing: behind a connection pooler in transaction mode, the LISTEN stays on
   * the server connection that ran it, and notifications reach the worker only while the pooler
   * happens to lend it that connection; new work would wait for the idle timer. Checked at the
   * start and after each reconnect, in the background, the wait timed from the check's commit (a
   * busy start may queue its send).
   */
  private async checkHearing(): Promise<boolean | null> {
    this.hearingCheck?.end(); // one check at a time: a reconnect may come before start() asks
    const token = `${HEARING_CHECK}${randomUUID()}`;
    const heard = await new Promise<boolean | null>((resolve) => {
      let timer: NodeJS.Timeout | undefined;
      const check = {
        heard: (payload: string) => payload === token && settle(true),
        end: () => settle(null),
      };
      const settle = (value: boolean | null) => {
        clearTimeout(timer);
        if (this.hearingCheck === check) this.hearingCheck = null;
        resolve(value);
      };
      this.hearingCheck = check;
      sendHearingCheck(this.db, token).then(
        () => {
          // Heard before the commit's answer came back: no timer.
          if (this.hearingCheck !== check) return;
          timer = setTimeout(() => settle(false), HEARING_CHECK_MS);
          timer.unref();
        },
        () => settle(null),
      );
    });
    if (heard === false) {
      this.log.error(
        { waitedMs: HEARING_CHECK_MS, idleTimerMs: this.maxIdleMs },
        'this worker did not hear its own notification: its LISTEN connection is down (see its ' +
          'errors), or a connection pooler in transaction mode, which Courier does not support, ' +
          'is between it and PostgreSQL; new work waits for the idle timer. Connect workers ' +
          'directly or through session pooling',
      );
    }
    return heard;
  }

  signal(): void {
    this.signalled = true;
    const waiter = this.waiter;
    this.waiter = null;
    waiter?.();
  }

  /**
   * Signals at `at`, when work falls due on an endpoint a completion freed room on: no claim
   * counted that endpoint's due time while it was at its cap. The earliest such instant is kept.
   */
  signalAt(at: number): void {
    if (this.stopped || (this.due && this.due.at <= at)) return;
    if (this.due) clearTimeout(this.due.timer);
    const timer = setTimeout(
      () => {
        this.due = null;
        this.signal();
      },
      Math.max(0, at - this.clock.now()),
    );
    timer.unref();
    this.due = { at, timer };
  }

  /** Forget earlier signals: whatever they announced, the next claim will see. */
  clear(): void {
    this.signalled = false;
  }

  /** Waits for a signal, or at most timeoutMs (capped at the idle maximum). */
  wait(timeoutMs?: number): Promise<void> {
    if (this.signalled || this.stopped) {
      this.signalled = false;
      return Promise.resolve();
    }
    const ms = Math.min(timeoutMs ?? this.maxIdleMs, this.maxIdleMs);
    if (ms <= 0) return Promise.resolve();
    // At the wake itself, not a tick later: a signal after it is kept for the next wait.
    return this.timed(ms, 'waiter', () => {
      this.signalled = false;
    });
  }

  /** Sleeps ms regardless of signals (backing off after failures); only halt() or stop() cuts it short. */
  sleep(ms: number): Promise<void> {
    if (this.stopped || ms <= 0) return Promise.resolve();
    return this.timed(ms, 'sleeper');
  }

  /**
   * Resolves after ms, or once the function it leaves in `slot` is called (which clears the slot
   * and runs `woken` first).
   */
  private timed(ms: number, slot: 'waiter' | 'sleeper', woken?: () => void): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      const self = this;
      function done() {
        clearTimeout(timer);
        if (self[slot] === done) self[slot] = null;
        woken?.();
        resolve();
      }
      this[slot] = done;
    });
  }

  /** Ends the wait or sleep under way, and every later one at once: the worker is stopping. */
  halt(): void {
    this.stopped = true;
    this.hearingCheck?.end();
    if (this.due) clearTimeout(this.due.timer);
    this.due = null;
    this.sleeper?.();
    this.signal();
  }

  async stop(): Promise<void> {
    this.halt();
    await this.unlisten?.().catch(() => {});
    this.unlisten = null;
  }
}
