import { ApiClient, apiPath, type OperatorOptions } from '../api-client.ts';
import { output, timestamp } from '../format.ts';
import { readPayload } from '../input.ts';

interface MessageOut {
  id: string;
  eventId: string | null;
  eventType: string;
  channels: string[] | null;
  timestamp: string;
}

export interface SendOptions extends OperatorOptions {
  eventId?: string;
  channel?: string[];
}

/** `courier send`: publishes one message; Courier fans it out to the subscribed endpoints. */
export async function send(app: string, eventType: string, payloadArg: string, options: SendOptions) {
  // Both check input only: a missing token or a bad payload fails before anything is sent.
  const client = ApiClient.connect(options);
  const payload = await readPayload(payloadArg);
  const message = await client.request<MessageOut>('POST', apiPath('app', app, 'msg'), {
    body: { eventType, payload, eventId: options.eventId, channels: options.channel },
  });
  output(
    options.json,
    message,
    [
      { header: 'ID', value: (m: MessageOut) => m.id },
      { header: 'EVENT TYPE', value: (m) => m.eventType },
      { header: 'EVENT ID', value: (m) => m.eventId ?? '-' },
      { header: 'CHANNELS', value: (m) => m.channels?.join(',') ?? '-' },
      { header: 'CREATED', value: (m) => timestamp(m.timestamp) },
    ],
    [message],
    '',
  );
}
