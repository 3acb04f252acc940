import { ApiClient, apiPath, type OperatorOptions } from '../api-client.ts';
import { printJson } from '../format.ts';
import { checkTimeRange } from '../input.ts';

// Under the 300 s undici (fetch) waits for response headers, whose error would say less.
const REPLAY_TIMEOUT_MS = 240_000;

export interface ReplayMissingOptions extends OperatorOptions {
  since: string;
  until?: string;
}

/**
 * `courier replay-missing`: sends an endpoint the messages it never had a delivery of (published
 * while it was disabled, or before it existed), with Svix's replay-missing.
 */
export async function replayMissing(app: string, endpoint: string, options: ReplayMissingOptions) {
  checkTimeRange(options);
  const client = ApiClient.connect(options);
  const { replayed } = await client.request<{ replayed: number }>(
    'POST',
    apiPath('app', app, 'endpoint', endpoint, 'replay-missing'),
    {
      body: { since: options.since, until: options.until },
      // The server answers once the whole range is done, batch after batch, and goes on without us.
      timeoutMs: REPLAY_TIMEOUT_MS,
      timeoutHint:
        'the replay may still be under way there; running it again later finishes it (nothing is sent twice)',
    },
  );
  if (options.json) printJson({ replayed });
  else process.stdout.write(`replayed ${replayed} ${replayed === 1 ? 'message' : 'messages'}\n`);
}
