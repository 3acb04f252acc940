/** A Courier API listening on a loopback port over a fresh test database, and a small client for it. */
import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { buildServer, type ServerDeps } from '../../src/api/server.ts';
import { ManualClock } from '../../src/clock.ts';
import { type Config, loadConfig } from '../../src/config.ts';
import type { Logger } from '../../src/logger.ts';
import { seededRandom } from '../../src/random.ts';
import type { Database } from '../../src/store/db.ts';
import { enableSecretsAtRest } from '../../src/store/secrets-at-rest.ts';
import { type Backend, openTestDatabase, type TestDatabase } from '../support/databases.ts';

export const TOKEN = 'test-token-0123456789';

export function testConfig(env: Record<string, string> = {}): Config {
  return loadConfig({ COURIER_ALLOW_PRIVATE_NETWORKS: '127.0.0.0/8', COURIER_ADMIN_TOKEN: TOKEN, ...env });
}

// biome-ignore lint/suspicious/noExplicitAny: answers are checked field by field with expect()
type Loose = any;

export interface Answer<T = Loose> {
  status: number;
  headers: Headers;
  /** Parsed JSON, or the text when the body is not JSON, or null when empty. */
  body: T;
  text: string;
}

export interface RequestOptions {
  body?: unknown;
  /** Sent as is (no JSON encoding). */
  raw?: string;
  headers?: Record<string, string>;
  /** null: no Authorization header. */
  token?: string | null;
}

export interface TestApi {
  url: string;
  app: FastifyInstance;
  db: Database;
  clock: ManualClock;
  config: Config;
  request<T = Loose>(method: string, path: string, options?: RequestOptions): Promise<Answer<T>>;
  close(): Promise<void>;
}

export interface StartOptions {
  backend?: Backend;
  env?: Record<string, string>;
  clock?: ManualClock;
  logger?: Logger;
  /** Reuse a database (its owner drops it). */
  database?: TestDatabase;
  metrics?: ServerDeps['metrics'];
}

export async function startApi(options: StartOptions = {}): Promise<TestApi> {
  const database = options.database ?? (await openTestDatabase(options.backend ?? 'pg'));
  const clock = options.clock ?? new ManualClock(Date.UTC(2026, 0, 1, 12));
  const config = testConfig(options.env);
  // As `courier serve` does: signing secrets are stored encrypted.
  await enableSecretsAtRest(database.db, config.secretsKey);
  const app = await buildServer({
    db: database.db,
    config,
    clock,
    logger: options.logger,
    random: seededRandom(7),
    metrics: options.metrics,
  });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const url = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;

  async function request(method: string, path: string, o: RequestOptions = {}): Promise<Answer> {
    const headers: Record<string, string> = { ...o.headers };
    const token = o.token === undefined ? TOKEN : o.token;
    if (token !== null) headers.authorization ??= `Bearer ${token}`;
    let body: string | undefined = o.raw;
    if (o.body !== undefined) {
      body = JSON.stringify(o.body);
      headers['content-type'] ??= 'application/json';
    }
    const response = await fetch(url + path, { method, headers, body });
    const text = await response.text();
    let parsed: unknown = null;
    if (text) {
      try {
        parsed = JSON.parse(text);
      } catch {
        parsed = text;
      }
    }
    return { status: response.status, headers: response.headers, body: parsed, text };
  }

  return {
    url,
    app,
    db: database.db,
    clock,
    config,
    request,
    async close() {
      await app.close();
      if (!options.database) await database.drop();
    },
  };
}

/** Creates an application (and returns its id). */
export async function createApp(api: TestApi, body: Record<string, unknown> = {}): Promise<string> {
  const res = await api.request('POST', '/api/v1/app', { body: { name: 'Test app', ...body } });
  if (res.status !== 201) throw new Error(`creating an app failed: ${res.status} ${res.text}`);
  return res.body.id;
}

export async function createEndpoint(
  api: TestApi,
  appId: string,
  body: Record<string, unknown>,
): Promise<Loose> {
  const res = await api.request('POST', `/api/v1/app/${appId}/endpoint`, { body });
  if (res.status !== 201) throw new Error(`creating an endpoint failed: ${res.status} ${res.text}`);
  return res.body;
}

/** An application's token (Svix's app portal access), every capability unless `body` says. */
export async function appPortalToken(
  api: TestApi,
  appId: string,
  body: Record<string, unknown> = {},
): Promise<string> {
  const res = await api.request('POST', `/api/v1/auth/app-portal-access/${appId}`, { body });
  if (res.status !== 200) throw new Error(`making an app portal token failed: ${res.status} ${res.text}`);
  return res.body.token;
}

/** Publishes a message (event type `e` unless the body says otherwise) and returns its id. */
export async function publishMessage(
  api: TestApi,
  appId: string,
  body: Record<string, unknown> = {},
): Promise<string> {
  const res = await api.request('POST', `/api/v1/app/${appId}/msg`, {
    body: { eventType: 'e', payload: { n: 1 }, ...body },
  });
  if (res.status !== 202) throw new Error(`publishing failed: ${res.status} ${res.text}`);
  return res.body.id;
}

/** A 422 answer's field locations, e.g. ['body.url']. */
export function locs(answer: Answer): string[] {
  return (answer.body.detail as { loc: string[] }[]).map((d) => d.loc.join('.'));
}
