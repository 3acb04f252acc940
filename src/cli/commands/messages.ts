import { ApiClient, apiPath, type OperatorOptions } from '../api-client.ts';
import { output } from '../format.ts';
import { checkTimeRange } from '../input.ts';
import { MESSAGE_COLUMNS, type MessageOut, standingColumns } from '../message-columns.ts';

export interface MessagesOptions extends OperatorOptions {
  limit: number;
  eventType?: string[];
  channel?: string;
  tag?: string;
  since?: string;
  until?: string;
}

/** The API's `after` is exclusive; --since includes its instant (times are kept to the millisecond). */
const justBefore = (iso: string) => new Date(Date.parse(iso) - 1).toISOString();

/**
 * `courier messages`: an application's latest messages, newest first, each with how many of its
 * endpoints have it delivered, pending, being sent or failed (an older server sends no counts: -).
 */
export async function messages(app: string, options: MessagesOptions) {
  checkTimeRange(options);
  const client = ApiClient.connect(options);
  const list = await client.list<MessageOut>(
    apiPath('app', app, 'msg'),
    {
      limit: Math.min(options.limit, 250),
      with_status: 'true',
      // The table shows no payload; JSON is what a script reads, so it gets the whole message.
      with_content: options.json ? 'true' : 'false',
      event_types: options.eventType,
      channel: options.channel,
      tag: options.tag,
      after: options.since && justBefore(options.since),
      before: options.until,
    },
    options.limit,
  );
  const filtered = options.eventType || options.channel || options.tag || options.since || options.until;
  output(
    options.json,
    list,
    [...MESSAGE_COLUMNS, ...standingColumns((m: MessageOut) => m.statusCounts)],
    list,
    filtered ? 'no messages match' : `no messages in application ${app}`,
  );
}
