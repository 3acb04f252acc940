import type { Clock } from '../clock.ts';
import { newId } from '../ids.ts';
import type { Logger } from '../logger.ts';
import { generateSecret } from '../signing/index.ts';
import type { Database } from '../store/db.ts';
import { publish } from '../store/publisher.ts';
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
 * Queues each operational event for the operator webhook in the transaction that records it: a
 * crash or a database error after that commit cannot lose it (queued after the commit, as before,
 * it was only logged when the publish failed). A savepoint keeps a failure to queue it (the
 * operator application removed, say) from undoing the pause or the completion that records it.
 */
export function operatorWebhookSink(appId: string, clock: Clock, logger: Logger): OperationalEventSink {
  return async (tx, event) => {
    // About the operator's own endpoint: it is the one failing, and a dead letter of an event
    // announcing a dead letter would announce itself for ever.
    if (event.appId === appId) return;
    await tx.query('savepoint courier_operator_event');
    try {
      await publish(tx, {
        appId,
        messageId: newId('msg', clock.now()),
        eventType: event.type,
        eventId: event.id,
        payload: Buffer.from(
          JSON.stringify({
            type: event.type,
            timestamp: new Date(event.createdAt).toISOString(),
            data: event.data,
          }),
        ),
        now: clock.now(),
      });
      await tx.query('release savepoint courier_operator_event');
    } catch (error) {
      await tx.query('rollback to savepoint courier_operator_event');
      logger.error(
        { err: error, event: event.id },
        'could not queue the operational event for the operator webhook',
      );
    }
  };
}
