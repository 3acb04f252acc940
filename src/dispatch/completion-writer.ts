import type { Clock } from '../clock.ts';
import type { Logger } from '../logger.ts';
import { DEFAULT_DISABLE_FAILING_AFTER_MS, failingTooLong } from '../policy/index.ts';
import type { Database } from '../store/db.ts';
import {
  type Completion,
  type CompletionOutcome,
  complete,
  logOvertaken,
} from '../store/queries/complete.ts';
import type { OperationalEvent } from '../store/queries/operational-events.ts';
import { attemptEventType, reportAttemptEvents } from './attempt-events.ts';
import { disableFailing, pauseForStreak } from './auto-pause.ts';
import { OPERATOR_APP_UID } from './operator-uids.ts';
import type { OperatorRelay } from './operator-webhook.ts';

/**
 * Writes a worker's completions, and what follows from them for operators: the attempt events
 * (message.attempt.exhausted, .failing, .recovered: in the completions' own transaction), the pauses a streak of
 * permanent failures calls for, the endpoints disabled for failing too long, and a nudge to the
 * operator relay once an event was recorded.
 */
export class CompletionWriter {
  /** Operational events written since the relay was last nudged. */
  #eventsRecorded = false;
  /**
   * Runs found not to stand when long enough (the operator's endpoint, spared; one ended meanwhile,
   * whose next run starts later): not looked at again under the endpoint's locks at every batch.
   */
  readonly #passedOver = new Map<string, number>();

  constructor(
    private readonly db: Database,
    private readonly owner: string,
    private readonly clock: Clock,
    private readonly log: Logger,
    private readonly pauseAfter: number,
    private readonly relay: OperatorRelay | undefined,
    /** COURIER_DISABLE_FAILING_AFTER; null: never. */
    private readonly disableFailingAfterMs: number | null = DEFAULT_DISABLE_FAILING_AFTER_MS,
  ) {}

  /**
   * One write for the batch. Events are rare (a dead letter, a fourth failure, a success after it):
   * only a batch with some takes a transaction, to record them with it.
   */
  async write(all: readonly Completion[]): Promise<CompletionOutcome> {
    const now = this.clock.now();
    const overtaken = all.filter((c) => c.overtaken);
    if (overtaken.length > 0) await logOvertaken(this.db, overtaken);
    const batch = overtaken.length > 0 ? all.filter((c) => !c.overtaken) : all;
    if (!batch.some((c) => attemptEventType(c) !== null))
      return complete(this.db, this.owner, now, batch, this.pauseAfter);
    return this.db.transaction(async (tx) => {
      const relay = this.relay !== undefined;
      if ((await reportAttemptEvents(tx, this.owner, batch, now, relay, this.log)) > 0)
        this.#eventsRecorded = true;
      return complete(tx, this.owner, now, batch, this.pauseAfter);
    });
  }

  /**
   * After a write: pauses the endpoints its alarms name and disables those failing too long, then
   * nudges the relay if events were recorded.
   */
  async settle({ alarms, failing }: Pick<CompletionOutcome, 'alarms' | 'failing'>): Promise<void> {
    const relay = this.relay !== undefined;
    for (const alarm of alarms) {
      const paused = await pauseForStreak(this.db, alarm, this.clock, relay).catch((error) =>
        this.log.error({ err: error, endpointId: alarm.endpointId }, 'auto-pause failed'),
      );
      if (paused) this.#held(paused, 'resumed');
    }
    const now = this.clock.now();
    for (const run of failing) {
      if (!failingTooLong(run.failingSince, now, this.disableFailingAfterMs)) continue;
      if (this.#passedOver.get(run.endpointId) === run.failingSince) continue;
      const disabled = await disableFailing(this.db, run, this.clock, relay, OPERATOR_APP_UID).catch(
        (error) => void this.log.error({ err: error, endpointId: run.endpointId }, 'auto-disable failed'),
      );
      if (disabled) this.#held(disabled, 'enabled again; new messages are not stored for it meanwhile');
      else if (disabled === null) {
        if (this.#passedOver.size >= 10_000) this.#passedOver.clear();
        this.#passedOver.set(run.endpointId, run.failingSince);
      }
    }
    if (this.#eventsRecorded) {
      this.#eventsRecorded = false;
      void this.relay?.run();
    }
  }

  /** An endpoint Courier held (paused or disabled): logged, and the relay to be nudged. */
  #held(event: OperationalEvent, until: string): void {
    this.#eventsRecorded = true;
    // Not its URL: webhook URLs often carry a token in their path or query.
    const { appId, endpointId } = event;
    const { reason, appUid } = event.data as { reason: string; appUid: string | null };
    if (appUid === OPERATOR_APP_UID) {
      this.log.error(
        { appId, endpointId },
        `an operational webhook endpoint was ${reason}: its notices are held until it is resumed (COURIER_OPERATOR_WEBHOOK_URL's also when a worker starts with another URL)`,
      );
    } else {
      this.log.warn(
        { appId, endpointId },
        `endpoint ${reason}; its deliveries are held until it is ${until}`,
      );
    }
  }
}
