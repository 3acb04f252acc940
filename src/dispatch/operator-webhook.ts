import type { Clock } from '../clock.ts';
import { newId } from '../ids.ts';
import type { Logger } from '../logger.ts';
import { generateSecret } from '../signing/index.ts';
import type { Database, Queryable, Transaction } from '../store/db.ts';
import { resumeEndpoint } from '../store/queries/endpoint-status.ts';
import {
  lockUnrelayed,
  markRelayed,
  type OperationalEvent,
  takenTypes,
} from '../store/queries/operational-events.ts';
import { publishBatch } from '../store/queries/publish.ts';
import { type Application, createApplication, findApplication } from '../store/repos/applications.ts';
import { createEndpoint, type Endpoint, findEndpoint, updateEndpoint } from '../store/repos/endpoints.ts';
import { EXHAUSTED, FAILING, RECOVERED } from './attempt-events.ts';
import { pausedByStreak } from './auto-pause.ts';
import { ENDPOINT_EVENT_TYPES } from './endpoint-events.ts';
import { OPERATOR_APP_UID, OPERATOR_ENDPOINT_UID } from './operator-uids.ts';

/** Held notices go out over this long once resumed, within the endpoint's own rate limit anyway. */
const RESUME_SPREAD_MS = 10_000;

/** Svix's: a background task (a replay, a recovery, a purge, statistics) is done. */
export const TASK_FINISHED = 'background_task.finished';

/** What the relay sends: what an operational webhook endpoint's filterTypes may name. */
export const OPERATIONAL_EVENT_TYPES = [
  EXHAUSTED,
  FAILING,
  RECOVERED,
  ...ENDPOINT_EVENT_TYPES,
  TASK_FINISHED,
] as const;

/**
 * The application whose endpoints receive operational events, made on first need: by a start with
 * COURIER_OPERATOR_WEBHOOK_URL or by the first operational webhook endpoint made through the API.
 */
export async function operatorApplication(tx: Transaction, now: number): Promise<Application> {
  await tx.query(`select pg_advisory_xact_lock(hashtext('courier_operator_endpoint'))`);
  return (
    (await findApplication(tx, OPERATOR_APP_UID)) ??
    (await createApplication(
      tx,
      newId('app', now),
      { name: 'Courier operator events', uid: OPERATOR_APP_UID },
      now,
    ))
  );
}

/**
 * The endpoint (uid "operator") of COURIER_OPERATOR_WEBHOOK_URL. Operational events travel like any
 * webhook, to the operator application's endpoints, so they are signed, retried and visible in the
 * attempt log. The operator reads the signing secret with
 * GET /api/v1/operational-webhook/endpoint/operator/secret.
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
    const app = await operatorApplication(tx, now);
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

/**
 * Whether COURIER_OPERATOR_WEBHOOK_URL's endpoint is still there and enabled: a start without the
 * URL leaves it receiving events (every worker relays), which is worth saying.
 */
export async function hasOperatorEndpoint(db: Database): Promise<boolean> {
  const found = await findOperationalEndpoint(db, OPERATOR_ENDPOINT_UID);
  return !!found && found.endpoint.status !== 'disabled';
}

/** An operational webhook endpoint (one of the operator application's), by id or uid. */
export async function findOperationalEndpoint(
  q: Queryable,
  idOrUid: string,
): Promise<{ app: Application; endpoint: Endpoint } | null> {
  const app = await findApplication(q, OPERATOR_APP_UID);
  const endpoint = app && (await findEndpoint(q, app.id, idOrUid));
  return app && endpoint ? { app, endpoint } : null;
}

const RELAY_BATCH = 100;
const RELAY_BATCHES_PER_RUN = 20;

/**
 * Sends recorded operational events to the operational webhook endpoints: publishes those not
 * relayed yet as messages of the operator application, those of a type one of its endpoints takes
 * (the others are for nobody), and marks them all, in one transaction of its own, holding
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
    const operator = await findApplication(tx, OPERATOR_APP_UID);
    // About an operational endpoint: it is the one failing, and a dead letter of an event
    // announcing a dead letter would announce itself for ever.
    const own = (event: OperationalEvent) => event.appId === operator?.id;
    // Only what an operational endpoint takes: the rest would be stored as messages for nobody.
    const taken = operator ? await takenTypes(tx, operator.id) : () => false;
    const outward = events.filter((event) => !own(event) && taken(event.type));
    // A notice an operational endpoint gave up on is not sent to it again: logged, or lost unseen.
    for (const event of events)
      if (own(event) && event.type === EXHAUSTED)
        this.log.error(
          { data: event.data },
          'the operator webhook did not take a notice; it is not sent again',
        );
    const now = this.clock.now();
    if (operator && outward.length > 0)
      await publishBatch(
        tx,
        outward.map((event) => ({
          appId: operator.id,
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
