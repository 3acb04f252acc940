/**
 * Bearer-token authentication. With COURIER_ADMIN_TOKEN set, that token is the one admin token;
 * otherwise one is generated on first start and only its SHA-256 hash is stored. An application's
 * tokens (POST /api/v1/auth/app-portal-access/{app_id}) open that application's part of the API.
 * Presented tokens are hashed before any comparison, so comparisons take the same time whatever
 * they hold, and a token never reaches a log line (nothing here logs headers).
 */
import { randomBytes, timingSafeEqual } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import type { Clock } from '../clock.ts';
import type { Config } from '../config.ts';
import type { Database } from '../store/db.ts';
import { findAppToken } from '../store/repos/app-tokens.ts';
import { findTokenByHash, hashToken, insertTokenIfAbsent } from '../store/repos/tokens.ts';
import { authorizeAppToken } from './app-token-access.ts';
import { unauthorized } from './errors.ts';
import type { Api, ApiDeps, Principal } from './types.ts';

const ADMIN = 'admin';

/** `courier_` + 32 random bytes in base64url: no dots, safe in shells and headers. */
export function generateToken(): string {
  return `courier_${randomBytes(32).toString('base64url')}`;
}

/** An application's token: a prefix the admin token's never starts with. */
export const APP_TOKEN_PREFIX = 'courierapp_';

export function generateAppToken(): string {
  return `${APP_TOKEN_PREFIX}${randomBytes(32).toString('base64url')}`;
}

/**
 * Makes sure an admin token exists. Returns the generated token the one time it is created
 * (for `courier serve` to print); null when COURIER_ADMIN_TOKEN is set or a token already exists.
 * Concurrent first starts race on a unique name: exactly one of them creates and returns a token.
 */
export async function ensureAdminToken(
  db: Database,
  config: Config,
  clock: Clock,
): Promise<{ created: string | null }> {
  if (config.adminToken) return { created: null };
  const token = generateToken();
  const created = await insertTokenIfAbsent(db, ADMIN, hashToken(token), clock.now());
  return { created: created ? token : null };
}

function bearer(header: string | undefined): string | null {
  const match = header ? /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(header) : null;
  return match ? match[1]! : null;
}

export type Authenticator = (authorization: string | undefined) => Promise<Principal | null>;

/**
 * The admin token, else an application's token that has not expired by the clock. An
 * application's tokens carry their own prefix, so admin requests never look them up.
 */
export function authenticator(db: Database, config: Config, clock: Clock): Authenticator {
  const configured = config.adminToken ? hashToken(config.adminToken) : null;
  return async (authorization) => {
    const token = bearer(authorization);
    if (!token) return null;
    const hash = hashToken(token);
    if (configured && timingSafeEqual(hash, configured)) return { kind: 'admin', scope: ADMIN };
    if (token.startsWith(APP_TOKEN_PREFIX)) {
      const found = await findAppToken(db, hash);
      if (!found || found.expiresAt <= clock.now()) return null;
      return {
        kind: 'app',
        scope: `app-token:${found.id}`,
        tokenId: found.id,
        appId: found.appId,
        capabilities: new Set(found.capabilities),
        featureFlags: found.featureFlags,
        expiresAt: found.expiresAt,
      };
    }
    if (configured) return null;
    const row = await findTokenByHash(db, hash);
    return row ? { kind: 'admin', scope: `token:${row.id}` } : null;
  };
}

/** Every route needs a token except those marked `config: { public: true }`; unknown routes answer 404. */
export function registerAuth(app: Api, deps: ApiDeps): void {
  const authenticate = authenticator(deps.db, deps.config, deps.clock);
  app.addHook('onRequest', async (request: FastifyRequest) => {
    if (request.is404 || request.routeOptions.config.public) return;
    const principal = await authenticate(request.headers.authorization);
    if (!principal) {
      throw unauthorized(
        request.headers.authorization ? 'Invalid token' : 'Missing token: send Authorization: Bearer <token>',
      );
    }
    if (principal.kind === 'app') await authorizeAppToken(deps.db, request, principal);
    request.principal = principal;
  });
}
