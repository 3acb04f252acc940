import { prepared, type Queryable } from '../db.ts';
import { toDate } from '../rows.ts';

/** A token opening one application's part of the API (Svix's app portal access). */
export interface AppToken {
  id: number;
  appId: string;
  capabilities: string[];
  /** The event types' feature flags it sees (Svix's featureFlags). */
  featureFlags: string[];
  expiresAt: number;
}

export interface NewAppToken {
  appId: string;
  hash: Buffer;
  capabilities: readonly string[];
  featureFlags: readonly string[];
  sessionId: string | null;
  now: number;
  expiresAt: number;
}

/** Stores a token's hash, and deletes up to 1,000 expired tokens of any application. */
export async function insertAppToken(db: Queryable, token: NewAppToken): Promise<void> {
  await db.query(
    `insert into courier_app_tokens (app_id, token_hash, capabilities, feature_flags, session_id, created_at, expires_at)
     values ($1, $2, $3, $4, $5, $6, $7)`,
    [
      token.appId,
      token.hash,
      token.capabilities,
      token.featureFlags,
      token.sessionId,
      toDate(token.now),
      toDate(token.expiresAt),
    ],
  );
  await db.query(
    `delete from courier_app_tokens where id in (
       select id from courier_app_tokens where expires_at <= $1 limit 1000)`,
    [toDate(token.now)],
  );
}

/**
 * Every request made with an application's token is checked here: named. A deleted
 * application's tokens are deleted with it, but one made as it was being deleted could outlive it.
 */
const FIND_APP_TOKEN = prepared(
  'courier_find_app_token',
  `select t.id, t.app_id, t.capabilities, t.feature_flags, t.expires_at
   from courier_app_tokens t join courier_applications a on a.id = t.app_id and a.deleted_at is null
   where t.token_hash = $1`,
);

/** The token with this hash, of a live application, expired or not (the caller judges by its own clock). */
export async function findAppToken(db: Queryable, hash: Buffer): Promise<AppToken | null> {
  const { rows } = await db.query<{
    id: string;
    app_id: string;
    capabilities: string[];
    feature_flags: string[];
    expires_at: Date;
  }>(FIND_APP_TOKEN, [hash]);
  const row = rows[0];
  return row
    ? {
        id: Number(row.id),
        appId: row.app_id,
        capabilities: row.capabilities,
        featureFlags: row.feature_flags,
        expiresAt: row.expires_at.getTime(),
      }
    : null;
}

/**
 * Makes an application's tokens expire by `at` at the latest (none later than they were to), only
 * those of the sessions named when some are. Returns how many will now end sooner.
 */
export async function expireAppTokens(
  db: Queryable,
  appId: string,
  at: number,
  sessionIds: readonly string[],
): Promise<number> {
  const { rowCount } = await db.query(
    `update courier_app_tokens set expires_at = $2
      where app_id = $1 and expires_at > $2 and (cardinality($3::text[]) = 0 or session_id = any($3))`,
    [appId, toDate(at), sessionIds],
  );
  return rowCount;
}

/** Ends one token at once (a logout). */
export async function deleteAppToken(db: Queryable, id: number): Promise<void> {
  await db.query('delete from courier_app_tokens where id = $1', [id]);
}
