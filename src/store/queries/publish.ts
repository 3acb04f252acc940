import type { Queryable } from '../db.ts';
import { toDate } from '../rows.ts';

export interface PublishInput {
  appId: string;
  messageId: string;
  eventType: string;
  /** The exact bytes every attempt will send. */
  payload: Buffer;
  eventId?: string | null;
  channels?: readonly string[] | null;
  tags?: readonly string[] | null;
  now: number;
}

export interface PublishResult {
  messageId: string;
  /** false when the application already had a message with this event id. */
  created: boolean;
  deliveries: number;
}

/** Message + one delivery per matching endpoint + NOTIFY, atomically (courier_publish). */
export async function publish(db: Queryable, input: PublishInput): Promise<PublishResult> {
  const { rows } = await db.query<{ message_id: string; created: boolean; deliveries: number }>(
    'select * from courier_publish($1, $2, $3, $4, $5, $6, $7, $8)',
    [
      input.appId,
      input.eventType,
      input.payload,
      input.eventId ?? null,
      input.channels ?? null,
      input.tags ?? null,
      toDate(input.now),
      input.messageId,
    ],
  );
  const row = rows[0]!;
  return { messageId: row.message_id, created: row.created, deliveries: row.deliveries };
}
