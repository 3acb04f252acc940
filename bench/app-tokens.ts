/**
 * What an application's token costs a request: the API (in this process, on loopback) answers
 * `GET /api/v1/app/{app}/endpoint` with the admin token, with an application's token naming its
 * application by id (the token's look-up and the table's check), and by uid (one more look-up of
 * the application), in alternating rounds; and how many tokens a second it makes.
 * Usage: tsx bench/app-tokens.ts [requests per round] [rounds] [--pglite]   (default 20000 and 3)
 */
import type { AddressInfo } from 'node:net';
import { Pool } from 'undici';
import { buildServer } from '../src/api/server.ts';
import { systemClock } from '../src/clock.ts';
import { loadConfig } from '../src/config.ts';
import { concurrently, openStore } from './lib.ts';

const CONCURRENCY = 16;
const ADMIN = 'bench-admin-token-0123456789';

export interface AppTokenFigures {
  requests: number;
  rounds: number;
  /** Median requests per second over the rounds. */
  adminPerSec: number;
  appTokenByIdPerSec: number;
  appTokenByUidPerSec: number;
  /** Microseconds a request with an application's token costs beyond the admin token's (by id, by uid). */
  extraUsById: number;
  extraUsByUid: number;
  /** Tokens made per second (POST /auth/app-portal-access, one at a time). */
  madePerSec: number;
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
const round1 = (n: number) => Math.round(n * 10) / 10;

export async function measureAppTokens(
  requests: number,
  rounds: number,
  embedded = false,
): Promise<AppTokenFigures> {
  const store = await openStore('bench_app_tokens', embedded);
  const config = loadConfig({ COURIER_ADMIN_TOKEN: ADMIN });
  const app = await buildServer({ db: store.db, config, clock: systemClock });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const pool = new Pool(`http://127.0.0.1:${(app.server.address() as AddressInfo).port}`, {
    connections: CONCURRENCY,
  });
  try {
    const call = async (method: string, path: string, token: string, body?: unknown) => {
      const res = await pool.request({
        method: method as 'GET',
        path,
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const text = await res.body.text();
      if (res.statusCode >= 300) throw new Error(`${method} ${path} answered ${res.statusCode}: ${text}`);
      return text ? JSON.parse(text) : null;
    };
    const { id } = await call('POST', '/api/v1/app', ADMIN, { name: 'bench', uid: 'bench-customer' });
    await call('POST', `/api/v1/app/${id}/endpoint`, ADMIN, { url: 'https://example.com/hook' });
    await store.analyze();
    const made = 200;
    const started = performance.now();
    let token = '';
    for (let i = 0; i < made; i++)
      token = (await call('POST', `/api/v1/auth/app-portal-access/${id}`, ADMIN, {})).token;
    const madePerSec = made / ((performance.now() - started) / 1000);

    const variants = {
      admin: () => call('GET', `/api/v1/app/${id}/endpoint`, ADMIN),
      byId: () => call('GET', `/api/v1/app/${id}/endpoint`, token),
      byUid: () => call('GET', '/api/v1/app/bench-customer/endpoint', token),
    };
    const rates: Record<keyof typeof variants, number[]> = { admin: [], byId: [], byUid: [] };
    for (const run of Object.values(variants)) await concurrently(1000, CONCURRENCY, run); // warm-up
    for (let r = 0; r < rounds; r++) {
      // Rotating order: a host drifting within the run weighs on each variant alike.
      const names = Object.keys(variants) as (keyof typeof variants)[];
      for (let k = 0; k < names.length; k++) {
        const name = names[(k + r) % names.length]!;
        rates[name].push(await concurrently(requests, CONCURRENCY, variants[name]));
      }
    }
    const admin = median(rates.admin);
    const byId = median(rates.byId);
    const byUid = median(rates.byUid);
    return {
      requests,
      rounds,
      adminPerSec: Math.round(admin),
      appTokenByIdPerSec: Math.round(byId),
      appTokenByUidPerSec: Math.round(byUid),
      extraUsById: round1(1e6 / byId - 1e6 / admin),
      extraUsByUid: round1(1e6 / byUid - 1e6 / admin),
      madePerSec: Math.round(madePerSec),
    };
  } finally {
    await pool.close();
    await app.close();
    await store.drop();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const args = process.argv.slice(2);
  const [requests = 20_000, rounds = 3] = args.filter((a) => !a.startsWith('--')).map(Number);
  if (!Number.isInteger(requests) || requests < 1 || !Number.isInteger(rounds) || rounds < 1) {
    console.error(
      `usage: tsx bench/app-tokens.ts [requests per round] [rounds] [--pglite]  (whole numbers above 0; not ${args.join(' ')})`,
    );
    process.exit(2);
  }
  const embedded = args.includes('--pglite');
  console.log(
    JSON.stringify({
      store: embedded ? 'pglite' : 'postgresql',
      ...(await measureAppTokens(requests, rounds, embedded)),
    }),
  );
}
