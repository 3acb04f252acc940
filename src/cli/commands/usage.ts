import { ApiClient, apiPath, type OperatorOptions } from '../api-client.ts';
import { apiError } from '../errors.ts';
import { output } from '../format.ts';
import { checkTimeRange } from '../input.ts';

export interface UsageOptions extends OperatorOptions {
  since: string;
  until?: string;
  app?: string[];
}

interface AppUsage {
  appId: string;
  appUid: string | null;
  messageDestinations: number;
}

interface AppEventTypes {
  appId: string;
  explicitlySubscribedEventTypes: string[];
  hasCatchAllEndpoint: boolean;
}

/** Courier counts before it answers: under a second per million message destinations on a small host. */
const STATS_TIMEOUT_MS = 600_000;

/** Starts a statistics task and reads its figures back, as a Svix client does. */
async function taskData<T>(client: ApiClient, method: 'POST' | 'PUT', path: string, body?: unknown) {
  const task = await client.request<{ id: string; status: string; unresolvedAppIds?: string[] }>(
    method,
    path,
    {
      body,
      timeoutMs: STATS_TIMEOUT_MS,
      timeoutHint: 'a shorter window (--since, --until) counts fewer messages',
    },
  );
  const done = await client.request<{ status: string; data: T }>('GET', apiPath('background-task', task.id));
  if (done.status !== 'finished') throw apiError(`task ${task.id} is ${done.status}`);
  return { data: done.data, unresolved: task.unresolvedAppIds ?? [] };
}

/**
 * `courier usage apps`: message destinations per application (a message and an endpoint it was
 * sent to, however many attempts) of the messages published in [--since, --until).
 */
export async function appUsage(options: UsageOptions) {
  // The operator's clock is the edge here: "until now" as the command runs.
  const until = options.until ?? new Date().toISOString();
  checkTimeRange({ since: options.since, until });
  const client = ApiClient.connect(options);
  const { data, unresolved } = await taskData<{ appStats: AppUsage[] }>(
    client,
    'POST',
    '/api/v1/stats/usage/app',
    {
      since: options.since,
      until,
      appIds: options.app ?? null,
    },
  );
  output(
    options.json,
    { appStats: data.appStats, unresolvedAppIds: unresolved },
    [
      { header: 'APPLICATION', value: (a: AppUsage) => a.appId },
      { header: 'UID', value: (a) => a.appUid ?? '-' },
      { header: 'DESTINATIONS', value: (a) => String(a.messageDestinations), align: 'right' },
    ],
    data.appStats,
    'no messages in that time',
  );
  if (unresolved.length > 0) throw apiError(`no application ${unresolved.join(', ')}`);
}

/** `courier usage event-types`: what each application's endpoints subscribe to. */
export async function eventTypeUsage(options: OperatorOptions) {
  const client = ApiClient.connect(options);
  const { data } = await taskData<{ event_types: AppEventTypes[] }>(
    client,
    'PUT',
    '/api/v1/stats/usage/event-types',
  );
  output(
    options.json,
    data.event_types,
    [
      { header: 'APPLICATION', value: (a: AppEventTypes) => a.appId },
      { header: 'EVERY TYPE', value: (a) => (a.hasCatchAllEndpoint ? 'yes' : 'no') },
      { header: 'EVENT TYPES', value: (a) => a.explicitlySubscribedEventTypes.join(' ') || '-', max: 70 },
    ],
    data.event_types,
    'no application has an endpoint',
  );
}
