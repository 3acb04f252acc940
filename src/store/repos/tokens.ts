import { createHash } from 'node:crypto';
import { prepared, type Queryable } from '../db.ts';
import { toDate } from '../rows.ts';

/** Tokens are stored and looked up by this hash only; the token itself is never persisted. */
export function hashToken(token: string): Buffer {
  return createHash('sha256').update(token, 'utf8').digest();
}

export interface ApiToken {
  id: number;
  name: string;
}

/** Stores a token's hash under a unique name; false when a token of that name already exists. */
export async function insertTokenIfAbsent(
  db: Queryable,
  name: string,
  hash: Buffer,
  now: number,
): Promise<boolean> {
  const { rows } = await db.query<{ id: number }>(
    `insert into courier_api_tokens (name, token_hash, created_at) values ($1, $2, $3)
     on conflict (name) do nothing returning id`,
    [name, hash, toDate(now)],
  );
  return rows.length > 0;
}

/** Every API request is checked here (but with COURIER_ADMIN_TOKEN's token): a hot statement, named. */
const FIND_TOKEN = prepared(
  'courier_find_token',
  'select id, name from courier_api_tokens where token_hash = $1',
);

export async function findTokenByHash(db: Queryable, hash: Buffer): Promise<ApiToken | null> {
  const { rows } = await db.query<{ id: number; name: string }>(FIND_TOKEN, [hash]);
  return rows[0] ? { id: Number(rows[0].id), name: rows[0].name } : null;
}
