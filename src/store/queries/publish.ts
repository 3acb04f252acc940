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

export interface BatchPublishResult extends PublishResult {
  /** Some endpoint had nothing due before this batch: idle workers need a NOTIFY. */
  woke: boolean;
}

interface PublishRow {
  message_id: string;
  created: boolean;
  deliveries: number;
  woke: boolean;
}

/**
 * Messages + one delivery per matching endpoint, in one statement (courier_publish_batch).
 * With notify, workers are woken when the surrounding transaction commits; without, the caller
 * wakes them after its commit (see publisher.ts).
 */
export async function publishBatch(
  q: Queryable,
  inputs: readonly PublishInput[],
  notify: boolean,
): Promise<BatchPublishResult[]> {
  const { rows } = await q.query<PublishRow>(
    'select * from courier_publish_batch($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)',
    [
      inputs.map((i) => i.appId),
      inputs.map((i) => i.eventType),
      Buffer.concat(inputs.map((i) => i.payload)),
      inputs.map((i) => i.payload.length),
      inputs.map((i) => i.eventId ?? null),
      JSON.stringify(inputs.map((i) => i.channels ?? null)),
      JSON.stringify(inputs.map((i) => i.tags ?? null)),
      inputs.map((i) => toDate(i.now)),
      inputs.map((i) => i.messageId),
      notify,
    ],
  );
  return rows.map((r) => ({
    messageId: r.message_id,
    created: r.created,
    deliveries: r.deliveries,
    woke: r.woke,
  }));
}
