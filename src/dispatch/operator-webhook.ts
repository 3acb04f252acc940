import type { Clock } from '../clock.ts';
import { newId } from '../ids.ts';
import type { Logger } from '../logger.ts';
import { generateSecret } from '../signing/index.ts';
import type { Database } from '../store/db.ts';
import { publishBatch } from '../store/queries/publish.ts';
import { createApplication, findApplication } from '../store/repos/applications.ts';
import { createEndpoint, findEndpoint, updateEndpoint } from '../store/repos/endpoints.ts';
import type { OperationalEventSink } from './auto-pause.ts';

export const OPERATOR_APP_UID = 'courier-operator';
export const OPERATOR_ENDPOINT_UID = 'operator';

/**
 * Operational events travel like any webhook: an internal application whose one endpoint is the
 * operator's URL, so they are signed, retried and visible in the attempt log. The operator reads
 * the signing secret with GET /api/v1/app/courier-operator/endpoint/operator/secret.
 */
export async function ensureOperatorEndpoint(db: Database, url: string, clock: Clock): Promise<string> {
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
    return app.id;
  });
}

/**
 * Queues operational events for the operator webhook in the transaction that records them: a
 * crash or a database error after that commit cannot lose them (queued after the commit, as before,
 * one was only logged when the publish failed). One statement for any number of events, under one
 * savepoint that keeps a failure to queue them (the operator application removed, say) from undoing
 * the pause or the completions that record them. The event id is the message's eventId, so an
 * event queued twice is sent once.
 */
export function operatorWebhookSink(appId: string, clock: Clock, logger: Logger): OperationalEventSink {
  return async (tx, events) => {
    // About the operator's own endpoint: it is the one failing, and a dead letter of an event
    // announcing a dead letter would announce itself for ever.
    const outward = events.filter((event) => event.appId !== appId);
    if (outward.length === 0) return;
    const now = clock.now();
    await tx.query('savepoint courier_operator_event');
    try {
      await publishBatch(
        tx,
        outward.map((event) => ({
          appId,
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
      await tx.query('release savepoint courier_operator_event');
    } catch (error) {
      await tx.query('rollback to savepoint courier_operator_event');
      logger.error(
        { err: error, events: outward.map((event) => event.id) },
        'could not queue the operational event for the operator webhook',
      );
    }
  };
}
