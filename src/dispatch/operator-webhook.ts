import type { Clock } from '../clock.ts';
import { newId } from '../ids.ts';
import type { Logger } from '../logger.ts';
import { generateSecret } from '../signing/index.ts';
import type { Database, Transaction } from '../store/db.ts';
import { resumeEndpoint } from '../store/queries/endpoint-status.ts';
import { lockUnrelayed, markRelayed } from '../store/queries/operational-events.ts';
import { publishBatch } from '../store/queries/publish.ts';
import { createApplication, findApplication } from '../store/repos/applications.ts';
import { createEndpoint, findEndpoint, updateEndpoint } from '../store/repos/endpoints.ts';
import { EXHAUSTED } from './attempt-events.ts';
import { pausedByStreak } from './auto-pause.ts';

export const OPERATOR_APP_UID = 'courier-operator';
export const OPERATOR_ENDPOINT_UID = 'operator';
/** Held notices go out over this long once resumed, within the endpoint's own rate limit anyway. */
const RESUME_SPREAD_MS = 10_000;

/**
 * Operational events travel like any webhook: an internal application whose one endpoint is the
 * operator's URL, so they are signed, retried and visible in the attempt log. The operator reads
 * the signing secret with GET /api/v1/app/courier-operator/endpoint/operator/secret.
 *
 * Its own streak of permanent failures pauses it like any endpoint, and no notice can say so: a
 * start with another URL resumes it, releasing the notices held meanwhile, so fixing the URL and
 * restarting is enough. A pause through the API, or the same URL (whose receiver may still refuse
 * them, dead-lettering the notices), leaves it paused. `resumed` is how many notices were released,
 * null when it was not resumed; `stillPaused` says it remains paused.
 */
export async function ensureOperatorEndpoint(
  db: Database,
  url: string,
  clock: Clock,
): Promise<{ appId: string; resumed: number | null; stillPaused: boolean }> {
  const now = clock.now();
  return db.transaction(async (tx) => {
    await tx.query(`select pg_advisory_xact_lock(hashtext('courier_operator_endpoint'))`);
    const app =
      (await findApplication(tx, OPERATOR_APP_UID)) ??
      (await createApplication(
        tx,
        newId('app', now),
        { name: 'Courier operator events', uid: OPERATOR_APP_UID },
        now,
      ));
    const endpoint = await findEndpoint(tx, app.id, OPERATOR_ENDPOINT_UID);
    const fields = {
      url,
      uid: OPERATOR_ENDPOINT_UID,
      description: 'COURIER_OPERATOR_WEBHOOK_URL',
      rateLimit: 10,
      maxInFlight: 2,
    };
    if (!endpoint) {
      await createEndpoint(tx, {
        id: newId('ep', now),
        appId: app.id,
        fields,
        secret: generateSecret(),
        now,
      });
    } else if (endpoint.url !== url) {
      await updateEndpoint(tx, endpoint.id, { ...endpoint, ...fields }, now);
    }
    if (endpoint?.status !== 'paused') return { appId: app.id, resumed: null, stillPaused: false };
    if (endpoint.url === url || !pausedByStreak(endpoint.statusReason)) {
      return { appId: app.id, resumed: null, stillPaused: true };
    }
    const resumed = await resumeEndpoint(tx, endpoint.id, now, RESUME_SPREAD_MS, 0);
    return { appId: app.id, resumed, stillPaused: false };
  });
}

const RELAY_BATCH = 100;
const RELAY_BATCHES_PER_RUN = 20;

/**
 * Sends recorded operational events to the operator webhook: publishes those not relayed yet as
 * messages of the operator application and marks them, in one transaction of its own, holding
 * no other row (recorded in a pause's or a completion's transaction, the events are not published
 * there: that took the operator endpoint's rows out of the store's lock order). A crash before the
 * commit leaves them to the next run; the event id is the message's eventId, so one published twice
 * is sent once. Runs do not overlap within a process, and relays of other processes pass by the
 * events one is sending.
 */
export class OperatorRelay {
  #running: Promise<number> | null = null;
  #again = false;

  constructor(
    private readonly db: Database,
    /** The operator application (ensureOperatorEndpoint). */
    readonly appId: string,
    private readonly clock: Clock,
    private readonly log: Logger,
  ) {}

  /** Sends what is waiting; a call during a run makes it look again when done. Never rejects. */
  run(): Promise<number> {
    if (this.#running) {
      this.#again = true;
      return this.#running;
    }
    this.#again = false;
    this.#running = this.#runAll().finally(() => {
      this.#running = null;
      // Asked again during this run: events recorded since may be waiting. Those who wait for
      // this run wait for that one too.
      if (this.#again) return this.run();
    });
    return this.#running;
  }

  async #runAll(): Promise<number> {
    let sent = 0;
    try {
      for (let i = 0; i < RELAY_BATCHES_PER_RUN; i++) {
        const n = await this.db.transaction((tx) => this.#relayBatch(tx));
        sent += n;
        if (n < RELAY_BATCH) break;
      }
    } catch (error) {
      this.log.error(
        { err: error },
        'could not queue operational events for the operator webhook; retrying later',
      );
    }
    return sent;
  }

  async #relayBatch(tx: Transaction): Promise<number> {
    const events = await lockUnrelayed(tx, RELAY_BATCH);
    if (events.length === 0) return 0;
    // About the operator's own endpoint: it is the one failing, and a dead letter of an event
    // announcing a dead letter would announce itself for ever.
    const outward = events.filter((event) => event.appId !== this.appId);
    // A notice the operator's receiver gave up on is not sent to it again: logged, or lost unseen.
    for (const event of events)
      if (event.appId === this.appId && event.type === EXHAUSTED)
        this.log.error(
          { data: event.data },
          'the operator webhook did not take a notice; it is not sent again',
        );
    const now = this.clock.now();
    if (outward.length > 0)
      await publishBatch(
        tx,
        outward.map((event) => ({
          appId: this.appId,
          messageId: newId('msg', now),
          eventType: event.type,
          eventId: event.id,
          payload: Buffer.from(
            JSON.stringify({
              type: event.type,
              timestamp: new Date(event.createdAt).toISOString(),
              data: event.data,
            }),
          ),
          now,
        })),
      );
    await markRelayed(
      tx,
      events.map((event) => event.id),
    );
    return events.length;
  }
}
