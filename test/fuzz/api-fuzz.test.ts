/**
 * Property-based fuzzing of the whole HTTP API over real HTTP: at least 10,000 malformed or
 * hostile requests to every route of the route table (plus unknown paths and raw-socket HTTP that
 * no client library would send). Every answer must be a JSON error or success, never a 5xx, never
 * HTML, in bounded time; requests that fail validation write nothing; and the database is
 * consistent afterwards.
 *
 * Replay a failure with the seed it prints: COURIER_FUZZ_SEED=<seed> npx vitest run test/fuzz/api-fuzz.test.ts
 * (COURIER_FUZZ_PATH=<path> reruns only the failing batch; COURIER_FUZZ_REQUESTS changes the request
 * count; COURIER_FUZZ_COLLECT=1 records every problem and prints them grouped instead of stopping).
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RouteRecord } from '../../src/api/route-table.ts';
import { routesOf } from '../../src/api/server.ts';
import type { Logger } from '../../src/logger.ts';
import { startApi, type TestApi } from '../e2e/support.ts';
import {
  AUTH,
  type Fixtures,
  MAX_BODY,
  rawRequest,
  requestFor,
  TOKEN,
  unknownPathRequest,
  weighted,
} from './arbitraries.ts';
import {
  answerProblems,
  brokenInvariants,
  contentDigest,
  describeRequest,
  type FuzzRequest,
  type FuzzResponse,
  HttpClient,
  rawExchange,
  rowCounts,
} from './harness.ts';

const SEED = Number(process.env.COURIER_FUZZ_SEED ?? 20_260_101);
const REQUESTS = Number(process.env.COURIER_FUZZ_REQUESTS ?? 10_000);
const BATCH = 8;
/** COURIER_FUZZ_COLLECT=1: record every problem and report them grouped at the end instead of stopping at the first. */
const COLLECT = process.env.COURIER_FUZZ_COLLECT === '1';
const collected = new Map<string, { count: number; example: string }>();

/** fc.assert with a short report: the seed and path that replay the failure, and our own description of it. */
async function assertFuzz<T>(property: fc.IAsyncProperty<T>, numRuns: number): Promise<void> {
  await fc.assert(property, {
    seed: SEED,
    numRuns,
    ...(process.env.COURIER_FUZZ_PATH ? { path: process.env.COURIER_FUZZ_PATH } : {}),
    endOnFailure: true,
    reporter: (details) => {
      if (!details.failed) return;
      const error =
        details.errorInstance instanceof Error
          ? details.errorInstance.message
          : String(details.errorInstance);
      throw new Error(
        `fuzz failure at run ${details.numRuns}. Replay the whole run: COURIER_FUZZ_SEED=${details.seed}; ` +
          `only the failing batch: COURIER_FUZZ_SEED=${details.seed} COURIER_FUZZ_PATH=${details.counterexamplePath}\n${error}`,
      );
    },
  });
}

/** Throws, or in collect mode records the problems by kind. */
function fail(problems: string[]): void {
  if (problems.length === 0) return;
  if (!COLLECT) throw new Error(problems.join('\n\n'));
  for (const p of problems) {
    const kind =
      p.split('\n')[0]!.replace(/\d+/g, 'N').slice(0, 120) + ' @ ' + (/\[([^\]]*)\]/.exec(p)?.[1] ?? '');
    const entry = collected.get(kind);
    if (entry) entry.count++;
    else collected.set(kind, { count: 1, example: p.slice(0, 1500) });
  }
}
const BODY_METHODS = new Set([
  'POST',
  'PUT',
  'PATCH',
  'DELETE',
  'OPTIONS',
  'TRACE',
  'PROPFIND',
  'SEARCH',
  'PURGE',
]);
const utf8 = new TextDecoder('utf-8', { fatal: true });

function isJsonType(contentType: string | undefined): boolean {
  return /^application\/json\s*(;|$)/i.test(contentType ?? '');
}

function parsesAsJson(body: Buffer): boolean {
  try {
    JSON.parse(utf8.decode(body));
    return true;
  } catch {
    return false;
  }
}

function validUtf8(body: Buffer): boolean {
  try {
    utf8.decode(body);
    return true;
  } catch {
    return false;
  }
}

const ROUND_TRIP_FIELDS = ['name', 'uid', 'description', 'url', 'eventType', 'eventId'];

/** Problems with an answer given what was asked (beyond answerProblems, which ignores the request). */
function requestProblems(r: FuzzRequest, res: FuzzResponse): string[] {
  const contentType = res.headers['content-type'] as string | undefined;
  const problems = answerProblems(r.method, r.path, res.status, contentType, res.text, res.ms);
  const ok = res.status < 400;
  if (r.route && !r.route.public && !r.validToken && ok) problems.push('answered without a valid token');
  const json = isJsonType(r.headers['content-type']);
  if (r.body && r.body.length > 0 && json && BODY_METHODS.has(r.method)) {
    if (!validUtf8(r.body) && ok) problems.push('accepted a body that is not UTF-8');
    else if (!parsesAsJson(r.body) && ok) problems.push('accepted a body that is not JSON');
    // 413 unless the URL was refused first (400 not decodable, 414 a parameter over 512 characters,
    // 431 request line and headers over 16 KiB).
    if (r.body.length > MAX_BODY && r.route && r.validToken && ![400, 413, 414, 431].includes(res.status)) {
      problems.push(`a body of ${r.body.length} bytes got ${res.status}, not 413`);
    }
  }
  // What was accepted is what is stored: the answer echoes the stored row.
  const created = ['POST', 'PUT', 'PATCH'].includes(r.method) && [200, 201, 202].includes(res.status);
  const getIfExists = r.method === 'POST' && res.status === 200;
  if (created && !getIfExists && r.sent && typeof r.sent === 'object' && !Array.isArray(r.sent)) {
    let answer: Record<string, unknown> | undefined;
    try {
      answer = JSON.parse(res.text);
    } catch {}
    const sent = r.sent as Record<string, unknown>;
    for (const field of ROUND_TRIP_FIELDS) {
      if (typeof sent[field] === 'string' && answer && field in answer && answer[field] !== sent[field]) {
        problems.push(
          `${field} sent as ${JSON.stringify(sent[field]).slice(0, 80)} came back as ${JSON.stringify(answer[field]).slice(0, 80)}`,
        );
      }
    }
  }
  return problems;
}

interface Stats {
  requests: number;
  byStatus: Map<number, number>;
  byRoute: Map<string, number>;
  /** 422s answered by the database (PostgreSQL class 22), not by validation: loc ['body'] and its message. */
  databaseRefusals: Map<string, number>;
}

function tally(stats: Stats, r: FuzzRequest, res: FuzzResponse): void {
  stats.requests++;
  stats.byStatus.set(res.status, (stats.byStatus.get(res.status) ?? 0) + 1);
  const route = r.route ? `${r.route.method} ${r.route.url}` : 'other';
  stats.byRoute.set(route, (stats.byRoute.get(route) ?? 0) + 1);
  if (res.status === 422) {
    try {
      const body = JSON.parse(res.text) as { detail: { loc: string[]; msg: string }[] };
      for (const item of Array.isArray(body.detail) ? body.detail : []) {
        if (item.loc.length === 1 && /type |encoding|Unicode|out of range|syntax/.test(item.msg)) {
          const msg = item.msg.replace(/"[^"]*"/g, '"…"').slice(0, 100);
          stats.databaseRefusals.set(msg, (stats.databaseRefusals.get(msg) ?? 0) + 1);
        }
      }
    } catch {}
  }
}

describe('API fuzz', () => {
  let api: TestApi;
  let client: HttpClient;
  let routes: RouteRecord[];
  const logged: string[] = [];
  const warnings: string[] = [];
  const onWarning = (w: Error) => warnings.push(`${w.name}: ${w.message}`);
  const fixtures: Fixtures = {
    'app.uid': 'fuzz-app',
    'app.id': 'app_01KDWPVNG0Z2T6P6PJXKZK51B0',
    'ep.uid': 'fuzz-ep',
    'ep.id': 'ep_01KDWPVNG0Z2T6P6PJXKZK51B0',
    'msg.eventId': 'fuzz-evt',
    'msg.id': 'msg_01KDWPVNG0Z2T6P6PJXKZK51B0',
    eventType: 'fuzz.type',
  };

  const call = async (method: string, path: string, body?: unknown) => {
    const res = await client.send({
      label: 'fixture',
      method,
      path,
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : Buffer.from(JSON.stringify(body)),
      validToken: true,
    });
    return { status: res.status, body: res.text ? JSON.parse(res.text) : null };
  };

  /** (Re)creates the fixtures the fuzzer aims at by uid; starts the application over when it has many endpoints. */
  async function refreshFixtures(): Promise<void> {
    const app = await call('PUT', '/api/v1/app/fuzz-app', { name: 'fuzz app', uid: 'fuzz-app' });
    expect(app.status, JSON.stringify(app.body)).toBeLessThan(300);
    const { rows } = await api.db.query<{ n: number }>(
      'select count(*)::int as n from courier_endpoints where app_id = $1 and deleted_at is null',
      [app.body.id],
    );
    if (rows[0]!.n > 25) {
      expect((await call('DELETE', '/api/v1/app/fuzz-app')).status).toBe(204);
      return refreshFixtures();
    }
    fixtures['app.id'] = app.body.id;
    const ep = await call('PUT', '/api/v1/app/fuzz-app/endpoint/fuzz-ep', {
      url: 'https://example.com/hook',
      uid: 'fuzz-ep',
    });
    expect(ep.status, JSON.stringify(ep.body)).toBeLessThan(300);
    fixtures['ep.id'] = ep.body.id;
    await call('POST', '/api/v1/app/fuzz-app/msg', {
      eventType: 'fuzz.type',
      eventId: 'fuzz-evt',
      payload: {},
    });
    const msg = await call('GET', '/api/v1/app/fuzz-app/msg/fuzz-evt');
    expect(msg.status).toBe(200);
    fixtures['msg.id'] = msg.body.id;
    // One more at each refresh (the fixture above is published once), so the last test checks the
    // store's invariants on deliveries whatever the run deleted.
    const more = await call('POST', '/api/v1/app/fuzz-app/msg', { eventType: 'fuzz.type', payload: {} });
    expect(more.status, JSON.stringify(more.body)).toBe(202);
    await call('PUT', '/api/v1/event-type/fuzz.type', { description: 'fuzz' });
  }

  async function healthy(): Promise<void> {
    const res = await client.send({
      label: 'health',
      method: 'GET',
      path: '/health',
      headers: {},
      validToken: false,
    });
    expect(res.status, 'GET /health').toBe(204);
    expect(api.app.server.listening).toBe(true);
  }

  beforeAll(async () => {
    const capture =
      (level: string) =>
      (obj: object, msg?: string): void => {
        logged.push(
          `${level} ${msg ?? ''} ${JSON.stringify(obj, (_k, v) => (v instanceof Error ? v.stack : v)).slice(0, 500)}`,
        );
      };
    const logger: Logger = {
      debug: () => {},
      info: () => {},
      warn: capture('warn'),
      error: capture('error'),
    };
    api = await startApi({ logger });
    client = new HttpClient(api.url, BATCH);
    routes = [...routesOf(api.app)];
    process.on('warning', onWarning);
    await refreshFixtures();
  });

  afterAll(async () => {
    if (COLLECT) {
      const kinds = [...collected.entries()].sort(([, a], [, b]) => b.count - a.count);
      console.log(
        `fuzz: ${kinds.length} kinds of problem\n${kinds.map(([k, v]) => `--- ${v.count}× ${k}\n${v.example}`).join('\n')}`,
      );
    }
    process.off('warning', onWarning);
    await client?.close();
    await api?.close();
  });

  it(`answers ${REQUESTS} hostile requests to every route: no 5xx, JSON errors, bounded time; rejected batches write nothing`, async () => {
    const started = performance.now();
    const stats: Stats = {
      requests: 0,
      byStatus: new Map(),
      byRoute: new Map(),
      databaseRefusals: new Map(),
    };
    const request = fc.oneof(
      ...routes.map((route) =>
        weighted(
          3,
          requestFor(route, () => fixtures),
        ),
      ),
      weighted(2, unknownPathRequest),
    );
    let run = 0;
    let counts = await rowCounts(api.db);
    const property = fc.asyncProperty(
      fc.array(request, { minLength: BATCH, maxLength: BATCH }),
      async (batch) => {
        run++;
        if (run % 25 === 0) {
          await refreshFixtures();
          counts = await rowCounts(api.db);
        }
        if (run % 50 === 0) await healthy();
        const answers = await Promise.all(
          batch.map(async (r) => {
            try {
              return await client.send(r);
            } catch (error) {
              throw new Error(`no answer (${(error as Error).message}) to\n${describeRequest(r)}`);
            }
          }),
        );
        const problems: string[] = [];
        batch.forEach((r, i) => {
          const res = answers[i]!;
          tally(stats, r, res);
          const found = requestProblems(r, res);
          if (found.length > 0) {
            problems.push(
              `${found.join('; ')}\n  answer ${res.status}: ${res.text.slice(0, 300)}\n${describeRequest(r)}`,
            );
          }
        });
        const after = await rowCounts(api.db);
        if (answers.every((a) => a.status >= 400)) {
          for (const [table, n] of Object.entries(after)) {
            if (n !== counts[table]) {
              problems.push(
                `${table} went from ${counts[table]} to ${n} rows in a batch where every request was refused:\n` +
                  batch.map(describeRequest).join('\n'),
              );
            }
          }
        }
        counts = after;
        // The server's own account of a failure (5xx are logged with their stack).
        if (problems.length > 0 && logged.length > 0) problems.push(`server log:\n${logged.join('\n')}`);
        fail(problems);
      },
    );
    await assertFuzz(property, Math.ceil(REQUESTS / BATCH));
    await healthy();
    const seconds = (performance.now() - started) / 1000;

    const statuses = [...stats.byStatus.entries()].sort(([a], [b]) => a - b);
    console.log(
      `fuzz: ${stats.requests} requests in ${seconds.toFixed(1)} s (seed ${SEED}); statuses ${statuses
        .map(([s, n]) => `${s}×${n}`)
        .join(' ')}`,
    );
    if (stats.databaseRefusals.size > 0) {
      console.log(
        `fuzz: 422s refused by the database rather than by validation: ${JSON.stringify([...stats.databaseRefusals])}`,
      );
    }
    expect(stats.requests).toBeGreaterThanOrEqual(REQUESTS);
    // Every route of the table was exercised, each many times.
    for (const route of routes) {
      expect(
        stats.byRoute.get(`${route.method} ${route.url}`) ?? 0,
        `${route.method} ${route.url}`,
      ).toBeGreaterThan(REQUESTS / routes.length / 4);
    }
    // Successes happened too: the fuzzer reached the handlers, not only the validators.
    for (const status of [200, 201, 202, 204, 400, 401, 404, 405, 413, 415, 422]) {
      expect(stats.byStatus.get(status) ?? 0, `answers with status ${status}`).toBeGreaterThan(0);
    }
    expect(logged, 'error and warning log lines').toEqual([]);
    expect(warnings, 'process warnings').toEqual([]);
  }, 180_000);

  it('writes nothing at all for requests that fail authentication, parsing or validation', async () => {
    const guarded = routes.filter((r) => !r.public);
    const withBody = guarded.filter((r) => r.schema?.body);
    const withParams = guarded.filter((r) => r.url.includes(':'));
    const withLimit = guarded.filter(
      (r) =>
        (r.schema?.querystring as { properties?: Record<string, unknown> } | undefined)?.properties?.limit,
    );
    const fill = (url: string) =>
      url
        .replace(':app_id', 'fuzz-app')
        .replace(':endpoint_id', 'fuzz-ep')
        .replace(':msg_id', 'fuzz-evt')
        .replace(':event_type_name', 'fuzz.type')
        .replace(':attempt_id', 'atmpt_01KDWPVNG0Z2T6P6PJXKZK51B0');
    const json = { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' };
    const post = fc.option(fc.constantFrom('k1', 'reject-key', 'shared-key'), { nil: undefined });
    const refused: fc.Arbitrary<FuzzRequest> = fc.oneof(
      // No or a wrong token, on every guarded route, with a perfectly good body
      fc
        .tuple(
          fc.constantFrom(...guarded),
          AUTH.filter((a) => !a.valid),
        )
        .map(([route, a]) => ({
          label: 'bad token',
          method: route.method,
          path: fill(route.url),
          headers: {
            ...(a.header === undefined ? {} : { authorization: a.header }),
            ...(route.method === 'HEAD' || route.method === 'GET'
              ? {}
              : { 'content-type': 'application/json' }),
          },
          body:
            route.method === 'HEAD' || route.method === 'GET'
              ? undefined
              : Buffer.from(
                  JSON.stringify({ name: 'x', url: 'https://example.com/', eventType: 'a', payload: {} }),
                ),
          validToken: false,
        })),
      // Bodies that are not JSON, not UTF-8, too large or of another type
      fc
        .tuple(
          fc.constantFrom(...withBody),
          fc.constantFrom(
            Buffer.from('{"name":"x"'),
            Buffer.from('{"name":"x"}}'),
            Buffer.from("{'name':'x'}"),
            Buffer.from('{"name":NaN}'),
            Buffer.from('{"__proto__":{"x":1},"name":"x"}'),
            Buffer.concat([Buffer.from('{"name":"'), Buffer.from([0xc0, 0xaf]), Buffer.from('"}')]),
            Buffer.from(`{"name":"${'x'.repeat(MAX_BODY)}"}`),
          ),
          post,
        )
        .map(([route, body, key]) => ({
          label: 'bad body',
          method: route.method,
          path: fill(route.url),
          headers: { ...json, ...(key ? { 'idempotency-key': key } : {}) },
          body,
          validToken: true,
        })),
      fc
        .tuple(
          fc.constantFrom(...withBody),
          fc.constantFrom('text/plain', 'application/xml', 'multipart/form-data'),
        )
        .map(([route, type]) => ({
          label: 'bad content type',
          method: route.method,
          path: fill(route.url),
          headers: { authorization: `Bearer ${TOKEN}`, 'content-type': type },
          body: Buffer.from('{"name":"x"}'),
          validToken: true,
        })),
      // Bodies of the wrong shape for the schema
      fc
        .tuple(fc.constantFrom(...withBody), fc.constantFrom('[]', '"x"', '1', 'true', '[{}]'), post)
        .map(([route, body, key]) => ({
          label: 'wrong body shape',
          method: route.method,
          path: fill(route.url),
          headers: { ...json, ...(key ? { 'idempotency-key': key } : {}) },
          body: Buffer.from(body),
          validToken: true,
        })),
      // Path parameters the schema refuses
      fc
        .tuple(
          fc.constantFrom(...withParams),
          fc.constantFrom('%00', 'a%20b', 'a'.repeat(300), '%2F', 'x%0Ay'),
        )
        .map(([route, bad]) => ({
          label: 'bad path parameter',
          method: route.method,
          path: route.url.replace(/:(\w+)/g, bad),
          headers: json,
          body: route.method === 'GET' || route.method === 'HEAD' ? undefined : Buffer.from('{}'),
          validToken: true,
        })),
      // Queries the schema refuses
      fc
        .tuple(
          fc.constantFrom(...withLimit),
          fc.constantFrom('limit=-1', 'limit=1e9', 'limit=abc', 'limit=0'),
        )
        .map(([route, query]) => ({
          label: 'bad query',
          method: route.method,
          path: `${fill(route.url)}?${query}`,
          headers: { authorization: `Bearer ${TOKEN}` },
          validToken: true,
        })),
    );

    const before = await contentDigest(api.db);
    let sent = 0;
    await assertFuzz(
      fc.asyncProperty(fc.array(refused, { minLength: BATCH, maxLength: BATCH }), async (batch) => {
        const answers = await Promise.all(batch.map((r) => client.send(r)));
        batch.forEach((r, i) => {
          const res = answers[i]!;
          sent++;
          const problems = requestProblems(r, res);
          if (res.status < 400) problems.push(`status ${res.status}: the request should have been refused`);
          if (problems.length > 0) {
            fail([`${problems.join('; ')}\n  answer: ${res.text.slice(0, 300)}\n${describeRequest(r)}`]);
          }
        });
      }),
      125,
    );
    expect(sent).toBe(1000);
    expect(await contentDigest(api.db)).toEqual(before);
  }, 60_000);

  it('answers malformed HTTP from raw sockets (CR/LF/NUL in headers, bad methods, CONNECT, bad framing) with JSON', async () => {
    const port = Number(new URL(api.url).port);
    await assertFuzz(
      fc.asyncProperty(fc.array(rawRequest, { minLength: BATCH, maxLength: BATCH }), async (batch) => {
        const answers = await Promise.all(batch.map((r) => rawExchange(port, r.bytes, r.halfClose)));
        batch.forEach((r, i) => {
          const a = answers[i]!;
          const problems: string[] = [];
          if (a.responses.length === 0) {
            if (!r.halfClose) {
              problems.push(
                `no HTTP answer (got ${JSON.stringify(a.bytes.subarray(0, 200).toString('latin1'))})`,
              );
            }
          }
          for (const res of a.responses) {
            problems.push(
              ...answerProblems('RAW', '/', res.status, res.headers['content-type'], res.body, a.ms),
            );
          }
          if (problems.length > 0) {
            fail([
              `${problems.join('; ')} [${r.label}]\n  sent: ${JSON.stringify(r.bytes.subarray(0, 300).toString('latin1'))}\n` +
                `  got: ${JSON.stringify(a.bytes.subarray(0, 400).toString('latin1'))}`,
            ]);
          }
        });
      }),
      100,
    );
    await healthy();
  }, 60_000);

  it('leaves the database consistent', async () => {
    await healthy();
    const ready = await client.send({
      label: 'ready',
      method: 'GET',
      path: '/health/ready',
      headers: {},
      validToken: false,
    });
    expect(ready.status).toBe(204);
    const { broken, known } = await brokenInvariants(api.db);
    if (known.length > 0) console.log(`fuzz: known store defects showed up:\n${known.join('\n')}`);
    expect(broken).toEqual([]);
    // The run did write: the invariants were checked on real data.
    const counts = await rowCounts(api.db);
    for (const table of [
      'courier_applications',
      'courier_endpoints',
      'courier_messages',
      'courier_event_types',
    ]) {
      expect(counts[table], table).toBeGreaterThan(10);
    }
    // Fewer: deleting an endpoint or application removes its deliveries.
    expect(counts.courier_deliveries).toBeGreaterThan(0);
  });
});
