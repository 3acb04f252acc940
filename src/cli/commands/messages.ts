import { ApiClient, apiPath, type OperatorOptions } from '../api-client.ts';
import { apiError } from '../errors.ts';
import { type Column, output, timestamp } from '../format.ts';
import { checkTimeRange, MESSAGE_STANDINGS } from '../input.ts';
import {
  MESSAGE_COLUMNS,
  type MessageOut,
  type StandingCounts,
  standingColumns,
  standingWord,
} from '../message-columns.ts';

export interface MessagesOptions extends OperatorOptions {
  limit: number;
  endpoint?: string;
  status?: (typeof MESSAGE_STANDINGS)[number];
  eventType?: string[];
  channel?: string;
  tag?: string;
  since?: string;
  until?: string;
}

/** Svix's EndpointMessageOut: a message as it stands at one endpoint. */
interface EndpointMessageOut extends MessageOut {
  statusText: string;
  nextAttempt: string | null;
}

/** The API's `after` is exclusive; --since includes its instant (times are kept to the millisecond). */
const justBefore = (iso: string) => new Date(Date.parse(iso) - 1).toISOString();

/** The statusCounts count of each --status word. */
const COUNT_OF: Record<(typeof MESSAGE_STANDINGS)[number], keyof StandingCounts> = {
  delivered: 'success',
  pending: 'pending',
  failed: 'fail',
  sending: 'sending',
};

/**
 * The messages the application's list answered for --status, kept where their counts say so: a
 * server older than the filter lists every message (and one older still sends no counts), and a
 * message may move on between the list and its counts.
 */
function standingSo<T extends MessageOut>(list: T[], status: keyof typeof COUNT_OF, limit: number): T[] {
  if (list.some((m) => !m.statusCounts)) {
    throw apiError(
      'this server sends no statusCounts, so it cannot filter its messages by --status: add --endpoint',
    );
  }
  const kept = list.filter((m) => m.statusCounts![COUNT_OF[status]] > 0);
  const left = list.length - kept.length;
  if (left > 0) {
    process.stderr.write(
      `courier: left out ${left} of the ${list.length} messages listed, their counts showing none ${status} ` +
        `(moved on since, or a server older than this CLI, which lists every message: then only the latest ${limit} were looked at)\n`,
    );
  }
  return kept;
}

/** At one endpoint: where the message stands there, and when it is tried next. */
const AT_ENDPOINT: readonly Column<EndpointMessageOut>[] = [
  { header: 'STATUS', value: (m) => standingWord(m.statusText) },
  { header: 'NEXT ATTEMPT', value: (m) => (m.nextAttempt ? timestamp(m.nextAttempt) : '-') },
];

/**
 * `courier messages`: an application's latest messages, newest first, each with how many of its
 * endpoints have it delivered, pending, being sent or failed (an older server sends no counts: -);
 * with --endpoint, the messages sent to that endpoint, each with where it stands there. --status
 * keeps those standing so there, or without --endpoint at one of their endpoints at least.
 */
export async function messages(app: string, options: MessagesOptions) {
  checkTimeRange(options);
  const { endpoint, status } = options;
  const client = ApiClient.connect(options);
  const list = await client.list<EndpointMessageOut>(
    endpoint ? apiPath('app', app, 'endpoint', endpoint, 'msg') : apiPath('app', app, 'msg'),
    {
      with_status: endpoint ? undefined : 'true',
      // Svix's codes 0–3 are MESSAGE_STANDINGS' order.
      status: status && MESSAGE_STANDINGS.indexOf(status),
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
  const shown = status && !endpoint ? standingSo(list, status, options.limit) : list;
  const filtered =
    status || options.eventType || options.channel || options.tag || options.since || options.until;
  output(
    options.json,
    shown,
    [...MESSAGE_COLUMNS, ...(endpoint ? AT_ENDPOINT : standingColumns((m: MessageOut) => m.statusCounts))],
    shown,
    filtered
      ? 'no messages match'
      : endpoint
        ? `no messages sent to endpoint ${endpoint}`
        : `no messages in application ${app}`,
  );
}
