import { newId } from '../../src/ids.ts';
import { generateSecret } from '../../src/signing/index.ts';
import type { Database, Queryable } from '../../src/store/db.ts';
import { publish } from '../../src/store/publisher.ts';
import type { Completion } from '../../src/store/queries/complete.ts';
import { EndpointConfigCache } from '../../src/store/queries/endpoint-config.ts';
import { createApplication } from '../../src/store/repos/applications.ts';
import { createEndpoint, type Endpoint, type EndpointFields } from '../../src/store/repos/endpoints.ts';

/** Empties the applications, their endpoints and their messages, for a test sharing its database. */
export async function emptyTables(db: Queryable): Promise<void> {
  await db.query(
    'truncate courier_attempts, courier_deliveries, courier_messages, courier_endpoint_queues, courier_endpoint_secrets, courier_endpoints, courier_applications cascade',
  );
}

export async function makeApp(db: Database, now: number, retryPolicy?: unknown) {
  return createApplication(db, newId('app', now), { name: 'Test app', retryPolicy }, now);
}

export async function makeEndpoint(
  db: Database,
  appId: string,
  now: number,
  fields: Partial<EndpointFields> & { url: string },
  secret = generateSecret(),
): Promise<Endpoint> {
  return db.transaction((tx) =>
    createEndpoint(tx, {
      id: newId('ep', now),
      appId,
      fields: { rateLimit: 1000, maxInFlight: 10, ...fields },
      secret,
      now,
    }),
  );
}

export async function publishJson(
  db: Queryable,
  appId: string,
  now: number,
  payload: unknown,
  extra: { eventType?: string; eventId?: string; channels?: string[] } = {},
) {
  return publish(db, {
    appId,
    messageId: newId('msg', now),
    eventType: extra.eventType ?? 'invoice.paid',
    eventId: extra.eventId ?? null,
    channels: extra.channels ?? null,
    payload: Buffer.from(JSON.stringify(payload)),
    now,
  });
}

/** A successful first attempt, as the worker would report it. */
export function deliveredCompletion(id: number, attempts: number, now: number): Completion {
  return {
    deliveryId: id,
    state: 'delivered',
    attempts,
    nextAttemptAt: null,
    giveUpAt: now + 72 * 3_600_000,
    lastError: null,
    streak: 'reset',
    attempt: {
      id: `atmpt_${id}_${attempts}_${now}`,
      number: attempts,
      trigger: 0,
      url: 'http://127.0.0.1:1/',
      startedAt: now,
      durationMs: 1,
      statusCode: 200,
      failureKind: null,
      responseHeaders: null,
      responseBody: null,
      decision: 'delivered',
      delayMs: null,
      reason: null,
      detail: 'ok',
    },
  };
}

/** An attempt to be retried at once, as the worker would report a 5xx's: the completion's retry path. */
export function retryCompletion(id: number, attempts: number, now: number): Completion {
  const done = deliveredCompletion(id, attempts, now);
  return { ...done, state: 'pending', nextAttemptAt: now, attempt: { ...done.attempt, decision: 'retry' } };
}

/** The secrets a claim at `now` signs the endpoint's requests with, opened, current first. */
export async function signingSecrets(db: Queryable, endpointId: string, now: number): Promise<string[]> {
  const { configs, unreadable } = await new EndpointConfigCache().resolve(
    db,
    [{ endpointId, version: '' }],
    now,
  );
  if (unreadable.has(endpointId)) throw unreadable.get(endpointId);
  return configs.get(endpointId)!.secretsAt(now);
}

/**
 * One endpoint's dead letters among other endpoints' waiting deliveries, written by SQL (a million
 * deliveries take seconds): `count` messages `msg_0000000001` on, message i published (with its
 * deliveries) 2·count − i minutes before `now`, the later ones the higher ids, dead at
 * `endpointIds[0]` since i seconds before `now`, and waiting at every other endpoint (due a day
 * later).
 */
export async function makeDeadLetters(
  db: Queryable,
  appId: string,
  endpointIds: readonly string[],
  count: number,
  now: number,
): Promise<void> {
  await db.query(
    `insert into courier_messages (id, app_id, event_type, payload, created_at)
     select 'msg_' || lpad(i::text, 10, '0'), $1, 'invoice.paid', convert_to('{"i":' || i || '}', 'UTF8'),
            $3::timestamptz - (2 * $2 - i) * interval '1 minute'
       from generate_series(1, $2) i`,
    [appId, count, new Date(now)],
  );
  await db.query(
    `insert into courier_deliveries (message_id, endpoint_id, state, next_attempt_at, attempts, created_at, updated_at)
     select 'msg_' || lpad(i::text, 10, '0'), e.id, case when e.id = $1::text then 'failed' else 'pending' end,
            $3::timestamptz + interval '1 day', 5, $3::timestamptz - (2 * $2 - i) * interval '1 minute',
            $3::timestamptz - i * interval '1 second'
       from generate_series(1, $2) i cross join unnest($4::text[]) e(id) order by i, e.id`,
    [endpointIds[0], count, new Date(now), endpointIds],
  );
}
