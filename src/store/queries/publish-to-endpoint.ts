import { EXAMPLE_TAG } from '../../message-limits.ts';
import type { Database } from '../db.ts';
import { StoreNotFoundError } from '../errors.ts';
import { toDate } from '../rows.ts';
import { resendDelivery } from './resend.ts';

export interface DirectMessage {
  appId: string;
  messageId: string;
  eventType: string;
  /** The exact bytes every attempt will send. */
  payload: Buffer;
  now: number;
}

/**
 * A message for one endpoint only, whatever its filter (Svix's send-example): stored as any other
 * message but tagged EXAMPLE_TAG, with a single delivery to that endpoint, made as a resend makes
 * one (a manual attempt, held while the endpoint is paused), in one transaction. The message row
 * is written first, which locks its application's key (its foreign key), then the resend takes
 * the endpoint row: the store's lock order.
 */
export async function publishToEndpoint(
  db: Database,
  message: DirectMessage,
  endpointId: string,
): Promise<void> {
  return db.transaction(async (tx) => {
    await tx.query(
      `insert into courier_messages (id, app_id, event_type, payload, tags, created_at)
       values ($1, $2, $3, $4, $5, $6)`,
      [
        message.messageId,
        message.appId,
        message.eventType,
        message.payload,
        [EXAMPLE_TAG],
        toDate(message.now),
      ],
    );
    const outcome = await resendDelivery(tx, { messageId: message.messageId, endpointId, now: message.now });
    // Deleted since it was looked up (nothing else can befall a message made here): nothing is kept.
    if (outcome !== 'scheduled' && outcome !== 'held') {
      throw new StoreNotFoundError(`endpoint ${endpointId} not found`);
    }
  });
}
