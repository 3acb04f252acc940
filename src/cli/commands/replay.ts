import { ApiClient, apiPath, type OperatorOptions } from '../api-client.ts';
import { printJson } from '../format.ts';
import { checkTimeRange, MESSAGE_STANDINGS, type STATUS_CODE_CLASSES } from '../input.ts';

// Under the 300 s undici (fetch) waits for response headers, whose error would say less.
const REPLAY_TIMEOUT_MS = 240_000;

interface RangeOptions extends OperatorOptions {
  since: string;
  until?: string;
}

export type ReplayMissingOptions = RangeOptions;

export interface BulkReplayOptions extends RangeOptions {
  status?: (typeof MESSAGE_STANDINGS)[number];
  statusCodeClass?: (typeof STATUS_CODE_CLASSES)[number];
  eventType?: string[];
  channel?: string;
  tag?: string;
}

/**
 * Runs one of the endpoint's replay routes and prints how many messages it scheduled. The server
 * answers once the whole range is done, batch after batch, and goes on without us if we leave.
 */
async function replay(
  app: string,
  endpoint: string,
  route: 'replay-missing' | 'bulk-replay',
  body: Record<string, unknown>,
  options: RangeOptions,
  timeoutHint: string,
) {
  checkTimeRange(options);
  const client = ApiClient.connect(options);
  const { replayed } = await client.request<{ replayed: number }>(
    'POST',
    apiPath('app', app, 'endpoint', endpoint, route),
    {
      body: { since: options.since, until: options.until, ...body },
      timeoutMs: REPLAY_TIMEOUT_MS,
      timeoutHint,
    },
  );
  if (options.json) printJson({ replayed });
  else process.stdout.write(`replayed ${replayed} ${replayed === 1 ? 'message' : 'messages'}\n`);
}

/**
 * `courier replay-missing`: sends an endpoint the messages it never had a delivery of (published
 * while it was disabled, or before it existed), with Svix's replay-missing.
 */
export function replayMissing(app: string, endpoint: string, options: ReplayMissingOptions) {
  return replay(
    app,
    endpoint,
    'replay-missing',
    {},
    options,
    'the replay may still be under way there; running it again later finishes it (nothing is sent twice)',
  );
}

/**
 * `courier bulk-replay`: sends an endpoint again the messages it had that match the filters, with
 * Svix's bulk replay. Unlike replay-missing, a second run sends them once more.
 */
export function bulkReplay(app: string, endpoint: string, options: BulkReplayOptions) {
  return replay(
    app,
    endpoint,
    'bulk-replay',
    {
      status: options.status === undefined ? undefined : MESSAGE_STANDINGS.indexOf(options.status),
      statusCodeClass: options.statusCodeClass === undefined ? undefined : Number(options.statusCodeClass),
      eventTypes: options.eventType,
      channel: options.channel,
      tag: options.tag,
    },
    options,
    'the replay may still be under way there; `courier attempts` shows what it sent (running it again sends those again)',
  );
}
