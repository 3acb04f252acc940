import { ApiClient, apiPath, type OperatorOptions } from '../api-client.ts';
import { output, timestamp } from '../format.ts';
import { readPayload } from '../input.ts';
import { MESSAGE_COLUMNS, type MessageOut } from '../message-columns.ts';

export interface SendOptions extends OperatorOptions {
  eventId?: string;
  channel?: string[];
  tag?: string[];
  /** Hours (wholeHoursWithin). */
  payloadRetention?: number;
  idempotencyKey?: string;
}

/** `courier send`: publishes one message; Courier fans it out to the subscribed endpoints. */
export async function send(app: string, eventType: string, payloadArg: string, options: SendOptions) {
  // Both check input only: a missing token or a bad payload fails before anything is sent.
  const client = ApiClient.connect(options);
  const payload = await readPayload(payloadArg);
  const unanswered = unansweredHint(app, options);
  const { body: message, headers } = await client.exchange<MessageOut>('POST', apiPath('app', app, 'msg'), {
    body: {
      eventType,
      payload,
      eventId: options.eventId,
      channels: options.channel,
      tags: options.tag,
      payloadRetentionHours: options.payloadRetention,
    },
    headers: options.idempotencyKey ? { 'idempotency-key': options.idempotencyKey } : undefined,
    // A dropped connection leaves the same doubt as a late answer.
    timeoutHint: unanswered,
    droppedHint: unanswered,
  });
  // On stderr, so --json's output stays the message alone.
  if (headers.get('idempotent-replayed') === 'true') {
    process.stderr.write(
      `courier: nothing new was published: ${message.id} was published under this --idempotency-key at ${timestamp(message.timestamp)}\n`,
    );
  }
  output(
    options.json,
    message,
    [...MESSAGE_COLUMNS, { header: 'PAYLOAD KEPT UNTIL', value: payloadKept }],
    [message],
    '',
  );
}

/** A repeat under the key whose payload has gone since says when; an earlier release says nothing. */
function payloadKept(m: MessageOut): string {
  if (m.expungedAt) return `gone ${timestamp(m.expungedAt)}`;
  return m.payloadExpiresAt ? timestamp(m.payloadExpiresAt) : '-';
}

/** What to do when the answer is late or lost: the message may have been published all the same. */
function unansweredHint(app: string, options: SendOptions): string {
  if (options.idempotencyKey) {
    return 'it may have been published: run the same command again, with the same --idempotency-key, within 24 hours';
  }
  if (options.eventId) {
    return `it may have been published: look for it with \`courier status ${app} ${options.eventId}\` (sent again with the same --event-id, it is refused if it was)`;
  }
  return 'it may have been published; with --idempotency-key (or --event-id) it could be sent again safely';
}
