import { ApiClient, apiPath, type OperatorOptions } from '../api-client.ts';
import { CliError } from '../errors.ts';
import { orDash, output, printJson, timestamp } from '../format.ts';
import { checkTimeRange } from '../input.ts';
import { progressBar } from '../progress.ts';

/** Courier extension: a delivery that failed permanently or expired. */
interface DeadLetterOut {
  deliveryId: number;
  msgId: string;
  state: 'failed' | 'expired';
  attempts: number;
  lastError: string | null;
  updatedAt: string;
  payloadExpunged: boolean;
}

export interface DlqOptions extends OperatorOptions {
  since?: string;
  until?: string;
}

export interface ReplayOptions extends DlqOptions {
  msg?: string[];
}

// Small enough that the bar moves every second or so, large enough to keep the request count low.
const REPLAY_CHUNK = 100;

const deadLetterPath = (app: string, endpoint: string, ...rest: string[]) =>
  apiPath('app', app, 'endpoint', endpoint, 'dead-letter', ...rest);

function deadLetters(client: ApiClient, app: string, endpoint: string, options: DlqOptions) {
  return client.list<DeadLetterOut>(deadLetterPath(app, endpoint), {
    since: options.since,
    until: options.until,
  });
}

const deliveries = (n: number) => `${n} ${n === 1 ? 'delivery' : 'deliveries'}`;

/** `courier dlq list`: every dead letter of an endpoint in the range, oldest first. */
export async function dlqList(app: string, endpoint: string, options: DlqOptions) {
  checkTimeRange(options);
  const client = ApiClient.connect(options);
  const list = await deadLetters(client, app, endpoint, options);
  output(
    options.json,
    list,
    [
      { header: 'MESSAGE', value: (d: DeadLetterOut) => d.msgId },
      { header: 'STATE', value: (d) => d.state },
      { header: 'ATTEMPTS', value: (d) => String(d.attempts), align: 'right' },
      { header: 'LAST ERROR', value: (d) => orDash(d.lastError), max: 70 },
      { header: 'PAYLOAD', value: (d) => (d.payloadExpunged ? 'expunged' : 'kept') },
      { header: 'WHEN', value: (d) => timestamp(d.updatedAt) },
    ],
    list,
    'no dead letters',
  );
}

/**
 * `courier dlq replay`: schedules dead letters again with a fresh attempt budget. The dead letters
 * are listed first (the total for the progress bar), then replayed by delivery id, chunk after
 * chunk; ones that died meanwhile wait for the next replay, so the count matches what was listed.
 * With --msg, the messages named instead.
 */
export async function dlqReplay(app: string, endpoint: string, options: ReplayOptions) {
  checkTimeRange(options);
  const client = ApiClient.connect(options);
  const named = options.msg?.length ? [...new Set(options.msg)] : null;
  const listed = named ? [] : await deadLetters(client, app, endpoint, options);
  // Their bytes are gone: nothing to send again, and said apart from the ones that raced.
  const expunged = listed.filter((d) => d.payloadExpunged).length;
  const ids = named ?? listed.filter((d) => !d.payloadExpunged).map((d) => d.deliveryId);
  const bar = progressBar(process.stderr, ids.length, 'replayed');
  let replayed = 0;
  try {
    for (let i = 0; i < ids.length; i += REPLAY_CHUNK) {
      const chunk = ids.slice(i, i + REPLAY_CHUNK);
      const answer = await client.request<{ replayed: number }>(
        'POST',
        deadLetterPath(app, endpoint, 'replay'),
        {
          body: {
            ...(named ? { messageIds: chunk } : { deliveryIds: chunk }),
            since: options.since,
            until: options.until,
          },
        },
      );
      replayed += answer.replayed;
      bar.update(replayed);
    }
  } catch (error) {
    // What the earlier chunks replayed is done: say so, or the operator cannot tell what to redo.
    if (!(error instanceof CliError) || replayed === 0) throw error;
    throw new CliError(`${error.message}; ${deliveries(replayed)} replayed before that`, error.exitCode);
  } finally {
    bar.finish();
  }
  if (options.json) {
    printJson({ replayed, total: ids.length + expunged, payloadExpunged: expunged });
    return;
  }
  // The API skips named ids that are not dead letters (delivered, pending, unknown) and dead
  // letters whose payload was deleted.
  const skipped = ids.length - replayed;
  const notes = [
    ...(skipped > 0 ? [`${skipped} of ${ids.length} could not be replayed`] : []),
    ...(expunged > 0 ? [`${deliveries(expunged)} not replayable: payload expunged`] : []),
  ];
  process.stdout.write(`replayed ${deliveries(replayed)}${notes.length ? ` (${notes.join('; ')})` : ''}\n`);
}
