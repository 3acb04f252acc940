/** The runner's side of Courier's API: set-up calls and publishing with idempotent retries. */
import type { EndpointPlan } from './catalog.ts';

export interface ApiClient {
  base: string;
  token: string;
}

export interface PostResult {
  status: number;
  body: Record<string, unknown>;
  /** Tries it took (network errors, 5xx and "key in use" are retried with the same idempotency key). */
  tries: number;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * POST with an idempotency key, retried until Courier answers for good: through API restarts,
 * PostgreSQL restarts (503) and a repeat that finds the first request still running (409 in use).
 */
export async function post(
  api: ApiClient,
  path: string,
  body: unknown,
  key: string,
  deadlineMs = 120_000,
): Promise<PostResult> {
  const deadline = Date.now() + deadlineMs;
  for (let tries = 1; ; tries++) {
    let retry: string;
    try {
      const response = await fetch(`${api.base}${path}`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${api.token}`,
          'content-type': 'application/json',
          'idempotency-key': key,
        },
        body: JSON.stringify(body),
        signal: AbortSignal.timeout(15_000),
      });
      const text = await response.text();
      const parsed = (text ? JSON.parse(text) : {}) as Record<string, unknown>;
      const inUse = response.status === 409 && parsed.code === 'idempotency_key_in_use';
      if (response.status < 500 && !inUse) return { status: response.status, body: parsed, tries };
      retry = `HTTP ${response.status} ${text.slice(0, 200)}`;
    } catch (error) {
      retry = (error as Error).message;
    }
    if (Date.now() > deadline) throw new Error(`POST ${path} (key ${key}) still failing: ${retry}`);
    await sleep(Math.min(2_000, 50 * 2 ** Math.min(tries, 6)) * (0.5 + Math.random() / 2));
  }
}

export async function createApp(api: ApiClient, uid: string): Promise<void> {
  const result = await post(api, '/api/v1/app', { name: 'Chaos', uid }, `app-${uid}`);
  if (result.status !== 201 && result.status !== 200) {
    throw new Error(`creating the application failed: ${result.status} ${JSON.stringify(result.body)}`);
  }
}

export async function createEndpoint(
  api: ApiClient,
  app: string,
  plan: EndpointPlan,
  url: string,
): Promise<string> {
  const body = {
    url,
    uid: `ep-${plan.index}`,
    description: plan.name,
    filterTypes: [eventTypeOf(plan.index)],
    ...(plan.maxInFlight ? { maxInFlight: plan.maxInFlight } : {}),
    ...(plan.rateLimit ? { rateLimit: plan.rateLimit } : {}),
  };
  const result = await post(api, `/api/v1/app/${app}/endpoint`, body, `endpoint-${app}-${plan.index}`);
  if (result.status !== 201) {
    throw new Error(`creating endpoint ${plan.name} failed: ${result.status} ${JSON.stringify(result.body)}`);
  }
  return String(result.body.id);
}

export const eventTypeOf = (endpointIndex: number) => `chaos.ep${endpointIndex}`;

const WAVE_MS = 15_000;

export interface PublishStats {
  published: number;
  /** Publishes that needed more than one try. */
  retried: number;
  tries: number;
  /** seq → message id, from the API's answer. */
  ids: Map<number, string>;
  failures: string[];
}

/**
 * Publishes `messages` messages, message `seq` to endpoint seq % endpoints, by `concurrency` loops,
 * in waves every WAVE_MS over `durationMs`: a wave lands several messages on every endpoint at
 * once, which is what puts its in-flight cap and rate limit to the test. Each has its own idempotency key and no eventId, so a
 * retried publish that created two messages would show up as a duplicate seq.
 */
export async function publishAll(
  api: ApiClient,
  app: string,
  opts: { messages: number; endpoints: number; durationMs: number; concurrency: number; runId: string },
  stats: PublishStats,
): Promise<void> {
  const start = Date.now();
  const waves = Math.max(1, Math.floor(opts.durationMs / WAVE_MS));
  const perWave = Math.ceil(opts.messages / waves);
  let next = 0;
  const loop = async () => {
    for (;;) {
      const seq = next++;
      if (seq >= opts.messages) return;
      const due = start + Math.floor(seq / perWave) * WAVE_MS;
      if (due > Date.now()) await sleep(due - Date.now());
      const body = { eventType: eventTypeOf(seq % opts.endpoints), payload: { seq, run: opts.runId } };
      try {
        const result = await post(api, `/api/v1/app/${app}/msg`, body, `msg-${opts.runId}-${seq}`);
        stats.tries += result.tries;
        if (result.tries > 1) stats.retried++;
        if (result.status !== 202) {
          stats.failures.push(`seq ${seq}: HTTP ${result.status} ${JSON.stringify(result.body)}`);
          continue;
        }
        stats.ids.set(seq, String(result.body.id));
        stats.published++;
      } catch (error) {
        stats.failures.push(`seq ${seq}: ${(error as Error).message}`);
      }
    }
  };
  await Promise.all(Array.from({ length: opts.concurrency }, loop));
}
