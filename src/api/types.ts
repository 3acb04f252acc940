import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type {
  FastifyBaseLogger,
  FastifyInstance,
  RawReplyDefaultExpression,
  RawRequestDefaultExpression,
  RawServerDefault,
} from 'fastify';
import type { Clock } from '../clock.ts';
import type { Config } from '../config.ts';
import type { Logger } from '../logger.ts';
import type { Random } from '../random.ts';
import type { Database } from '../store/db.ts';
import type { IdempotencyKey } from '../store/repos/idempotency.ts';

export interface ApiDeps {
  db: Database;
  config: Config;
  clock: Clock;
  logger: Logger;
  random: Random;
}

/** The Fastify instance with TypeBox schemas typing requests and replies. */
export type Api = FastifyInstance<
  RawServerDefault,
  RawRequestDefaultExpression,
  RawReplyDefaultExpression,
  FastifyBaseLogger,
  TypeBoxTypeProvider
>;

/** Who made the request: idempotency keys are scoped to it. */
export type Principal = AdminPrincipal | AppPrincipal;

export interface AdminPrincipal {
  kind: 'admin';
  scope: string;
}

/** An application's token (Svix's app portal access): that application alone, as its capabilities allow. */
export interface AppPrincipal {
  kind: 'app';
  scope: string;
  tokenId: number;
  appId: string;
  capabilities: ReadonlySet<string>;
  /** The event types' feature flags it sees: one with flags is shown only when it holds one. */
  featureFlags: readonly string[];
  /** When it stops working, ms since the epoch. */
  expiresAt: number;
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Served without a token. */
    public?: boolean;
    /**
     * Its answer holds a credential (a token): not stored for idempotency-key repeats, which would
     * keep it readable in the database. A repeat does the work again.
     */
    credentialAnswer?: boolean;
  }
  interface FastifySchema {
    summary?: string;
    description?: string;
    tags?: string[];
    operationId?: string;
  }
  interface FastifyRequest {
    principal?: Principal;
    idempotencyKey?: IdempotencyKey;
    /** The message this request published: its stored idempotent response names it. */
    publishedMessageId?: string;
    /**
     * The id its idempotency key gave what this request creates (a message, an application, an
     * endpoint): a new one, or (retried) that of an earlier try of the same request whose outcome
     * is unknown, which may have created it.
     */
    reservedId?: { id: string; retried: boolean };
    /** It began to create: failing with a 5xx, its outcome is unknown and the id stays with the key. */
    creationAttempted?: boolean;
    /** What it answers with an earlier try created (found by its reserved id): sent marked as a replay. */
    earlierTryFound?: boolean;
    /** The claim's lock: only the request that holds it may store or release the key. */
    idempotencyToken?: number;
  }
}
