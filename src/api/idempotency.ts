/**
 * `idempotency-key` on POST (the Svix SDKs send one on every POST and retry 5xx and network
 * errors with the same key). The first request with a key takes it; its response (status and
 * body, unless a 5xx) is stored for 24 hours under (token scope, key, method, path), and repeats
 * get that response back without the work being redone. A repeat while the first is still running
 * waits for it. A repeat with another body or query is refused (422): the key was reused by mistake.
 */
import { createHash } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { type IdPrefix, newId } from '../ids.ts';
import {
  claimIdempotencyKey,
  completeIdempotencyKey,
  findIdempotencyKey,
  type IdempotencyKey,
  purgeExpiredIdempotencyKeys,
  releaseIdempotencyKey,
  type StoredResponse,
} from '../store/repos/idempotency.ts';
import { payloadGoneAt } from '../store/repos/messages.ts';
import { createError, fieldError, isUidTaken } from './errors.ts';
import { iso } from './schemas/common.ts';
import type { Api, ApiDeps } from './types.ts';

export const IDEMPOTENCY_TTL_MS = 24 * 3_600_000;
/** The route whose work is a publish (messages.ts). */
export const PUBLISH_ROUTE = '/api/v1/app/:app_id/msg';
/** The routes that create something with an id of its own, and that id's prefix. */
const CREATES: Readonly<Record<string, IdPrefix>> = {
  [PUBLISH_ROUTE]: 'msg',
  '/api/v1/app': 'app',
  '/api/v1/app/:app_id/endpoint': 'ep',
  '/api/v1/operational-webhook/endpoint': 'ep',
  '/api/v1/app/:app_id/endpoint/:endpoint_id/send-example': 'msg',
};
/** A handler holding a key longer than this is presumed dead; a repeat may take the key over. */
const LOCK_MS = 60_000;
const WAIT_STEP_MS = 50;
const MAX_WAIT_STEPS = 200;
const PURGE_EVERY = 100;
/**
 * Storing the response is tried this often (STORE_RETRY_MS, then twice that, …) before the
 * response goes without it: a key left unstored is taken over once its lock runs out, and the
 * request's work, already done, is done again.
 */
const STORE_ATTEMPTS = 4;
const STORE_RETRY_MS = 50;

const keyMismatch = createError(
  'idempotency_key_mismatch',
  'This idempotency-key was already used for a different request (body or query); use a new key',
  422,
);
const stillRunning = createError(
  'idempotency_key_in_use',
  'A request with this idempotency-key is still being processed; retry later',
  409,
);

/** JSON with sorted keys: the same body gives the same fingerprint whatever the key order. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value && typeof value === 'object') {
    const entries = Object.entries(value).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/**
 * The stored answer as it reads at `now`: one that published a message whose payload has gone
 * since (expunged, or past its own retention, swept or not) shows it gone, as a read of the message
 * does. An expunge blanks the stored copy, but one past its retention, neither swept nor deleted,
 * still holds the payload: it is replaced here either way, and the instant added.
 */
function replayedBody(stored: StoredResponse, now: number): string | null {
  const goneAt = stored.publishedPayload && payloadGoneAt(stored.publishedPayload, now);
  if (goneAt == null || !stored.body) return stored.body;
  let answer: unknown;
  try {
    answer = JSON.parse(stored.body);
  } catch {
    return stored.body;
  }
  if (answer === null || typeof answer !== 'object' || !('payload' in answer)) return stored.body;
  return JSON.stringify({ ...answer, payload: {}, expungedAt: iso(goneAt), payloadExpiresAt: null });
}

function fingerprint(request: FastifyRequest): string {
  const query = request.url.includes('?') ? request.url.slice(request.url.indexOf('?')) : '';
  return createHash('sha256')
    .update(`${query}\n${canonical(request.body ?? null)}`)
    .digest('base64url');
}

/**
 * Creates what a POST names under the id its idempotency key reserved: a repeat of a request whose
 * outcome is unknown (a 5xx, its commit's answer lost) gets what the earlier try created, found by
 * that id, instead of a second one. Without a key, under a new id. (A publish has its own: its
 * answer waits for its commit to be flushed; messages.ts.)
 */
export async function createOnce<T>(
  request: FastifyRequest,
  prefix: IdPrefix,
  now: number,
  find: (id: string) => Promise<T | null>,
  create: (id: string) => Promise<T>,
): Promise<T> {
  const reserved = request.reservedId;
  const earlier = async () => {
    const found = reserved ? await find(reserved.id) : null;
    if (found) request.earlierTryFound = true;
    return found;
  };
  if (reserved?.retried) {
    const found = await earlier();
    if (found) return found;
  }
  request.creationAttempted = true;
  try {
    return await create(reserved?.id ?? newId(prefix, now));
  } catch (error) {
    // Its id or uid taken: the earlier try, still committing when this one looked, created it.
    const found = isUidTaken(error) ? await earlier() : null;
    if (found) return found;
    throw error;
  }
}

export function registerIdempotency(app: Api, deps: ApiDeps): void {
  const { db, clock, logger } = deps;
  let claims = 0;
  /**
   * Gives the key back for a repeat. A creation that ran, in this try or an earlier one (a repeat
   * that failed before it could tell), leaves it its id: that outcome is unknown.
   */
  const release = (request: FastifyRequest, key: IdempotencyKey) =>
    releaseIdempotencyKey(
      db,
      key,
      request.creationAttempted === true || request.reservedId?.retried === true,
      request.idempotencyToken ?? null,
    );

  app.addHook('preHandler', async (request: FastifyRequest, reply: FastifyReply) => {
    const header = request.headers['idempotency-key'];
    if (request.method !== 'POST' || header === undefined || !request.principal) return;
    if (request.routeOptions.config.credentialAnswer) return;
    if (typeof header !== 'string' || header.length === 0 || header.length > 256) {
      throw fieldError(['header', 'idempotency-key'], 'must be a single value of 1-256 characters');
    }
    const key: IdempotencyKey = {
      scope: request.principal.scope,
      key: header,
      method: request.method,
      path: request.url.split('?')[0]!,
    };
    const print = fingerprint(request);
    // A creation names what it creates before it runs: a repeat after an unknown outcome looks for it.
    const prefix = CREATES[request.routeOptions.url ?? ''];
    for (let step = 0; step < MAX_WAIT_STEPS; step++) {
      const now = clock.now();
      const fresh = prefix ? newId(prefix, now) : null;
      const claimed = await claimIdempotencyKey(db, key, print, now, LOCK_MS, IDEMPOTENCY_TTL_MS, fresh);
      if (claimed) {
        request.idempotencyKey = key;
        request.idempotencyToken = claimed.token;
        if (claimed.messageId) {
          request.reservedId = { id: claimed.messageId, retried: claimed.messageId !== fresh };
        }
        if (++claims % PURGE_EVERY === 0) {
          purgeExpiredIdempotencyKeys(db, clock.now(), 1000).catch((err) =>
            logger.warn({ err }, 'purging expired idempotency keys failed'),
          );
        }
        return;
      }
      const stored = await findIdempotencyKey(db, key);
      if (!stored) continue; // released in between: claim again
      if (stored.fingerprint !== print) throw keyMismatch();
      if (stored.status !== null) {
        reply.code(stored.status).header('idempotent-replayed', 'true');
        if (stored.contentType) reply.header('content-type', stored.contentType);
        return reply.send(replayedBody(stored, now) || undefined);
      }
      await sleep(WAIT_STEP_MS);
    }
    throw stillRunning();
  });

  // The response is stored as it is sent; a 5xx gives the key back so a retry redoes the work
  // (a publish: under the same message id).
  app.addHook('onSend', async (request: FastifyRequest, reply: FastifyReply, payload: unknown) => {
    // As the stored answer is marked when sent again: this try created nothing (courier send says so);
    // an error after the find (serialising the answer, say) is this try's own.
    if (request.earlierTryFound && reply.statusCode < 400) reply.header('idempotent-replayed', 'true');
    const key = request.idempotencyKey;
    if (!key) return payload;
    request.idempotencyKey = undefined;
    const contentType = reply.getHeader('content-type');
    const token = request.idempotencyToken ?? null;
    const store =
      reply.statusCode >= 500
        ? () => release(request, key)
        : () =>
            completeIdempotencyKey(
              db,
              key,
              {
                status: reply.statusCode,
                contentType: typeof contentType === 'string' ? contentType : null,
                body: typeof payload === 'string' ? payload : '',
                messageId: request.publishedMessageId,
              },
              token,
            );
    for (let attempt = 1; ; attempt++) {
      try {
        await store();
        break;
      } catch (err) {
        if (attempt === STORE_ATTEMPTS) {
          logger.warn({ err }, 'storing the idempotent response failed');
          break;
        }
        await sleep(STORE_RETRY_MS * 2 ** (attempt - 1));
      }
    }
    return payload;
  });

  // The request ended without a response being sent (client gone): let a retry do the work.
  app.addHook('onResponse', async (request: FastifyRequest) => {
    const key = request.idempotencyKey;
    if (!key) return;
    request.idempotencyKey = undefined;
    await release(request, key).catch(() => {});
  });
}
