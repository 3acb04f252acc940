/**
 * The nastiest inputs the fuzzer (api-fuzz.test.ts) throws, as plain examples: a regression names
 * itself here. Those marked "was:" are defects the fuzzer found and src/api now handles.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_JSON_DEPTH } from '../../src/api/json-checks.ts';
import { deleteApplication } from '../../src/store/repos/applications.ts';
import { createApp, createEndpoint, locs, startApi, type TestApi } from '../e2e/support.ts';
import { TOKEN } from './arbitraries.ts';
import { contentDigest, rawExchange } from './harness.ts';

const JSON_TYPE = { 'content-type': 'application/json' };
const nest = (levels: number, inner = '1') => '{"a":'.repeat(levels) + inner + '}'.repeat(levels);

describe('nasty inputs', () => {
  let api: TestApi;
  let appId: string;
  let endpointId: string;
  let port: number;
  const errorLogs: unknown[] = [];
  const raw = (method: string, path: string, body: string | Buffer, headers: Record<string, string> = {}) =>
    fetch(api.url + path, {
      method,
      headers: { authorization: `Bearer ${TOKEN}`, ...JSON_TYPE, ...headers },
      body,
    }).then(async (r) => ({
      status: r.status,
      type: r.headers.get('content-type'),
      // biome-ignore lint/suspicious/noExplicitAny: answers are checked field by field with expect()
      body: (await r.json()) as any,
    }));

  beforeAll(async () => {
    const log = (obj: object, msg?: string) => errorLogs.push([msg, obj]);
    api = await startApi({ logger: { debug: () => {}, info: () => {}, warn: log, error: log } });
    appId = await createApp(api, { uid: 'nasty-app' });
    endpointId = (await createEndpoint(api, appId, { url: 'https://example.com/hook', uid: 'nasty-ep' })).id;
    port = Number(new URL(api.url).port);
  });
  afterAll(async () => {
    expect(errorLogs, 'nothing was logged as an error').toEqual([]);
    await api.close();
  });

  describe('deep nesting (was: 500, stack overflow)', () => {
    it('a payload nested 10,000 levels is a 400, with or without an idempotency key', async () => {
      for (const key of [undefined, 'deep-key']) {
        const res = await raw(
          'POST',
          `/api/v1/app/${appId}/msg`,
          `{"eventType":"a","payload":${nest(10_000)}}`,
          {
            ...(key ? { 'idempotency-key': key } : {}),
          },
        );
        expect(res.status).toBe(400);
        expect(res.body).toEqual({ code: 'invalid_json', detail: expect.stringContaining('nested deeper') });
      }
    });

    it('arrays nested 10,000 levels on a route without a body schema (the idempotency fingerprint recursed)', async () => {
      const res = await raw(
        'POST',
        `/api/v1/app/${appId}/endpoint/${endpointId}/pause`,
        '['.repeat(10_000) + ']'.repeat(10_000),
        {
          'idempotency-key': 'deep-pause',
        },
      );
      expect(res.status).toBe(400);
      expect(res.body.code).toBe('invalid_json');
    });

    it('event-type schemas nested 100,000 levels (PostgreSQL jsonb ran out of stack)', async () => {
      const res = await raw(
        'POST',
        '/api/v1/event-type',
        `{"name":"deep","description":"d","schemas":${nest(100_000)}}`,
      );
      expect(res.status).toBe(400);
    });

    it(`takes exactly ${MAX_JSON_DEPTH} levels (serde_json's limit, as Svix), refuses one more`, async () => {
      // The body object is level 1, the payload level 2.
      const ok = await raw(
        'POST',
        `/api/v1/app/${appId}/msg`,
        `{"eventType":"a","payload":${nest(MAX_JSON_DEPTH - 2, '{}')}}`,
      );
      expect(ok.status).toBe(202);
      const over = await raw(
        'POST',
        `/api/v1/app/${appId}/msg`,
        `{"eventType":"a","payload":${nest(MAX_JSON_DEPTH - 1, '{}')}}`,
      );
      expect(over.status).toBe(400);
    });
  });

  describe('text that cannot be stored as sent (was: 201 with U+FFFD stored instead)', () => {
    it('bytes that are not UTF-8 (overlong, surrogate, truncated) are a 400 and write nothing', async () => {
      const before = await contentDigest(api.db);
      for (const bytes of [[0xc0, 0xaf], [0xe0, 0x80, 0xaf], [0xed, 0xa0, 0x80], [0xe2, 0x82], [0xff]]) {
        const body = Buffer.concat([Buffer.from('{"name":"'), Buffer.from(bytes), Buffer.from('"}')]);
        const res = await raw('POST', '/api/v1/app', body);
        expect(res.status, Buffer.from(bytes).toString('hex')).toBe(400);
        expect(res.body).toEqual({ code: 'invalid_json', detail: 'Body is not valid UTF-8' });
      }
      expect(await contentDigest(api.db)).toEqual(before);
    });

    it('a lone surrogate escape is a 400; a surrogate pair is an emoji and round-trips', async () => {
      for (const name of ['\\ud800', 'a\\udfffb', '\\udc00\\ud800']) {
        const res = await raw('POST', '/api/v1/app', `{"name":"${name}"}`);
        expect(res.status, name).toBe(400);
        expect(res.body.detail).toContain('lone UTF-16 surrogate');
      }
      const key = await raw('POST', '/api/v1/app', '{"name":"x","metadata":{"\\ud800":"v"}}');
      expect(key.status).toBe(400);
      const pair = await raw('POST', '/api/v1/app', '{"name":"\\ud83d\\ude00 \u202e\u200b"}');
      expect(pair.status).toBe(201);
      expect(pair.body.name).toBe('😀 \u202e\u200b');
    });

    it('a BOM before the JSON is still accepted', async () => {
      const res = await raw(
        'POST',
        '/api/v1/app',
        Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('{"name":"bom"}')]),
      );
      expect(res.status).toBe(201);
    });
  });

  describe('values the database refused instead of validation (was: 422 with a PostgreSQL message at loc body)', () => {
    it('a leap second passes RFC 3339 but not Date.parse: 422 at its own location', async () => {
      const warnings: Error[] = [];
      const onWarning = (w: Error) => warnings.push(w);
      process.on('warning', onWarning);
      try {
        const list = await api.request('GET', `/api/v1/app/${appId}/msg?before=2016-12-31T23:59:60Z`);
        expect(list.status).toBe(422);
        expect(locs(list)).toEqual(['query.before']);
        const dead = await api.request(
          'GET',
          `/api/v1/app/${appId}/endpoint/${endpointId}/dead-letter?since=2016-12-31T23:59:60Z`,
        );
        expect(locs(dead)).toEqual(['query.since']);
        const recover = await api.request('POST', `/api/v1/app/${appId}/endpoint/${endpointId}/recover`, {
          body: { since: '2016-12-31T23:59:60+00:00' },
        });
        expect(locs(recover)).toEqual(['body.since']);
      } finally {
        process.off('warning', onWarning);
      }
      // pg warned "Sending an invalid date to Postgres is deprecated and will throw an error".
      expect(warnings).toEqual([]);
      // Forms both RFC 3339 and Date.parse read are still fine.
      for (const t of [
        '2026-01-01t12:00:00z',
        '2026-01-01 12:00:00Z',
        '2026-01-01T12:00:00.123456789+05:30',
      ]) {
        expect(
          (await api.request('GET', `/api/v1/app/${appId}/msg?before=${encodeURIComponent(t)}`)).status,
          t,
        ).toBe(200);
      }
    });

    it('an endpoint version beyond a PostgreSQL integer is a 422 on body.version', async () => {
      const res = await api.request('POST', `/api/v1/app/${appId}/endpoint`, {
        body: { url: 'https://example.com/', version: 2 ** 31 },
      });
      expect(res.status).toBe(422);
      expect(locs(res)).toEqual(['body.version']);
      const max = await api.request('POST', `/api/v1/app/${appId}/endpoint`, {
        body: { url: 'https://example.com/', version: 2 ** 31 - 1 },
      });
      expect(max.status).toBe(201);
    });

    it('NUL in an endpoint URL or in a metadata key is a 422 at that field', async () => {
      const url = await api.request('POST', `/api/v1/app/${appId}/endpoint`, {
        body: { url: 'https://example.com/\u0000' },
      });
      expect(locs(url)).toEqual(['body.url']);
      const meta = await api.request('POST', '/api/v1/app', {
        body: { name: 'x', metadata: { 'k\u0000': 'v' } },
      });
      expect(meta.status).toBe(422);
      expect(locs(meta)).toEqual(['body.metadata']);
      expect(meta.body.detail[0].msg).toContain('key');
    });

    it('NUL inside event-type schemas is still refused by PostgreSQL jsonb: a 422, not a 500', async () => {
      const res = await raw(
        'POST',
        '/api/v1/event-type',
        '{"name":"nul","description":"d","schemas":{"1":{"x":"\\u0000"}}}',
      );
      expect(res.status).toBe(422);
      expect(res.body.code).toBe('validation');
    });
  });

  describe('malformed HTTP (was: Fastify {error, message, statusCode} bodies, or no answer at all)', () => {
    const request = (lines: string[], body = '') =>
      Buffer.from(`${lines.join('\r\n')}\r\n\r\n${body}`, 'latin1');
    const cases: [string, Buffer, number, string][] = [
      [
        'CR/LF in idempotency-key',
        request([
          'POST /api/v1/app HTTP/1.1',
          'Host: x',
          `Authorization: Bearer ${TOKEN}`,
          'Idempotency-Key: a\rb',
          'Content-Length: 0',
        ]),
        400,
        'bad_request',
      ],
      [
        'NUL in a header value',
        request(['GET /api/v1/app HTTP/1.1', 'Host: x', 'X-A: a\u0000b']),
        400,
        'bad_request',
      ],
      ['a method that is no token', request(['GE T /api/v1/app HTTP/1.1', 'Host: x']), 400, 'bad_request'],
      [
        'headers over 16 KiB',
        request(['GET /api/v1/app HTTP/1.1', 'Host: x', `X-Big: ${'b'.repeat(20_000)}`]),
        431,
        'headers_too_large',
      ],
      [
        'Content-Length and Transfer-Encoding (request smuggling)',
        request(
          ['POST /api/v1/app HTTP/1.1', 'Host: x', 'Content-Length: 4', 'Transfer-Encoding: chunked'],
          '0\r\n\r\n',
        ),
        400,
        'bad_request',
      ],
      [
        'CONNECT',
        request(['CONNECT example.com:443 HTTP/1.1', 'Host: example.com:443']),
        405,
        'method_not_allowed',
      ],
    ];
    for (const [name, bytes, status, code] of cases) {
      it(`${name}: ${status} {code: ${code}}`, async () => {
        const answer = await rawExchange(port, bytes);
        expect(answer.responses).toHaveLength(1);
        const res = answer.responses[0]!;
        expect(res.status).toBe(status);
        expect(res.headers['content-type']).toMatch(/^application\/json/);
        expect(JSON.parse(res.body)).toEqual({ code, detail: expect.any(String) });
      });
    }
    it('the server still answers afterwards', async () => {
      expect((await api.request('GET', '/health', { token: null })).status).toBe(204);
    });
  });

  it('PATCH/PUT of an application deleted after its lookup is a 404 (was: 500 "application … not found")', async () => {
    const id = await createApp(api, { name: 'doomed' });
    const db = api.db;
    const transaction = db.transaction.bind(db);
    // The DELETE lands between the route's lookup and its writing transaction, as a concurrent
    // request would.
    db.transaction = (async (fn: Parameters<typeof transaction>[0]) => {
      db.transaction = transaction;
      await transaction((tx) => deleteApplication(tx, id, api.clock.now()));
      return transaction(fn);
    }) as typeof db.transaction;
    try {
      const res = await api.request('PATCH', `/api/v1/app/${id}`, { body: { name: 'renamed' } });
      expect(res.status).toBe(404);
      expect(res.body.code).toBe('not_found');
    } finally {
      db.transaction = transaction;
    }
  });

  it('a transaction PostgreSQL aborted as a deadlock victim is retried (was: 500 "deadlock detected")', async () => {
    // The fuzzer hit it with PATCH …/endpoint/:id (or PUT …/headers) racing POST …/pause on the same
    // endpoint: the store locks their rows in opposite orders (see store-races.test.ts).
    const db = api.db;
    const transaction = db.transaction.bind(db);
    let calls = 0;
    db.transaction = (async (fn: Parameters<typeof transaction>[0]) => {
      if (calls++ === 0) throw Object.assign(new Error('deadlock detected'), { code: '40P01' });
      return transaction(fn);
    }) as typeof db.transaction;
    try {
      const res = await api.request('PATCH', `/api/v1/app/${appId}/endpoint/${endpointId}`, {
        body: { description: 'after a deadlock' },
      });
      expect(res.status).toBe(200);
      expect(res.body.description).toBe('after a deadlock');
      expect(calls).toBe(2);
    } finally {
      db.transaction = transaction;
    }
  });

  describe('already handled (kept as examples)', () => {
    it('JSON that is not JSON: 400 invalid_json', async () => {
      for (const body of [
        '{"name":NaN}',
        '{"name":Infinity}',
        '{"name":"x"',
        '{"name":"x"}}',
        "{'name':'x'}",
        '{"name":"x"} x',
        '{"name":1e400}x',
      ]) {
        const res = await raw('POST', '/api/v1/app', body);
        expect(res.status, body).toBe(400);
        expect(res.body.code).toBe('invalid_json');
      }
    });

    it('__proto__ and constructor.prototype keys, even nested or escaped: 400, nothing polluted', async () => {
      for (const body of [
        '{"name":"x","__proto__":{"polluted":1}}',
        '{"name":"x","metadata":{"__proto__":{"polluted":"1"}}}',
        '{"name":"x","\\u005f_proto__":{"polluted":1}}',
        '{"name":"x","constructor":{"prototype":{"polluted":1}}}',
      ]) {
        expect((await raw('POST', '/api/v1/app', body)).status, body).toBe(400);
      }
      expect(({} as { polluted?: unknown }).polluted).toBeUndefined();
    });

    it('a number beyond a double (1e400 parses as Infinity) is a 400 anywhere, a payload included', async () => {
      const outOfRange = {
        code: 'invalid_json',
        detail: 'Body contains a number out of range (beyond ±1.8e308)',
      };
      const limit = await raw('POST', '/api/v1/app', '{"name":"x","rateLimit":1e400}');
      expect([limit.status, limit.body]).toEqual([400, outOfRange]);
      // JSON.stringify would have stored it as null: the receiver would get data never sent.
      const app = await raw('POST', '/api/v1/app', '{"name":"numbers"}');
      const msg = await raw(
        'POST',
        `/api/v1/app/${app.body.id}/msg`,
        '{"eventType":"a","payload":{"n":-1e999}}',
      );
      expect([msg.status, msg.body]).toEqual([400, outOfRange]);
      const big = await raw(
        'POST',
        `/api/v1/app/${app.body.id}/msg`,
        '{"eventType":"a","payload":{"n":1e308}}',
      );
      expect(big.status).toBe(202);
      const { rows } = await api.db.query<{ n: number }>(
        'select count(*)::int as n from courier_messages where app_id = $1',
        [app.body.id],
      );
      expect(rows[0]!.n).toBe(1);
    });

    it('a number a double cannot hold exactly is a 400, not a payload sent with another value', async () => {
      const app = await raw('POST', '/api/v1/app', '{"name":"ids"}');
      const send = (payload: string) =>
        raw('POST', `/api/v1/app/${app.body.id}/msg`, `{"eventType":"a","payload":${payload}}`);
      // A snowflake id would have been sent as 1234567890123456800.
      for (const literal of [
        '1234567890123456789',
        '-9007199254740993',
        '0.10000000000000000001',
        '1e-400',
        '1234567.1234567891',
      ]) {
        const answer = await send(`{"id":${literal},"note":"x"}`);
        expect(answer.status, literal).toBe(400);
        expect(answer.body.code).toBe('invalid_json');
        expect(answer.body.detail).toContain(`the number ${literal},`);
      }
      // Exactly held, however written (17 digits of the double, as %.17g prints 0.1); the same
      // digits inside a string are only text.
      for (const fine of [
        '9007199254740991',
        '0.1',
        '1.0',
        '1e300',
        '0.30000000000000004',
        '0.10000000000000001',
        '4.9406564584124654e-324',
        '"1234567890123456789"',
      ]) {
        expect((await send(`{"id":${fine}}`)).status, fine).toBe(202);
      }
    });

    it('a body over the limit is a 413 JSON before anything is read into memory', async () => {
      const res = await raw(
        'POST',
        `/api/v1/app/${appId}/msg`,
        `{"eventType":"a","payload":{"x":"${'y'.repeat(2 * 1024 * 1024)}"}}`,
      );
      expect(res.status).toBe(413);
      expect(res.body.code).toBe('payload_too_large');
    });

    it('hostile path segments: 422 or 404 JSON, never a 500', async () => {
      for (const [segment, status] of [
        ['%00', 422],
        ['%2F', 422],
        ['a'.repeat(300), 422],
        ['%27%3B%20drop%20table%20courier_applications%3B--', 422],
        ['..', 404],
        ['%FF', 400],
        ['a'.repeat(600), 414],
      ] as const) {
        const res = await api.request('GET', `/api/v1/app/${segment}/endpoint`);
        expect(res.status, segment).toBe(status);
        expect(res.body.code).toEqual(expect.any(String));
      }
    });

    it('pagination: bad limits, foreign and garbage iterators, bad order', async () => {
      for (const q of [
        'limit=-1',
        'limit=1e9',
        'limit=abc',
        'iterator=ep_01KDWPVNG0Z2T6P6PJXKZK51B0',
        'iterator=-',
        'iterator=--x',
        'order=sideways',
      ]) {
        expect((await api.request('GET', `/api/v1/app?${q}`)).status, q).toBe(422);
      }
      expect((await api.request('GET', `/api/v1/app?iterator=-${appId}`)).status).toBe(200);
      expect((await api.request('GET', '/api/v1/event-type?iterator=-')).status).toBe(200);
    });

    it('header injection through endpoint headers: 422, nothing stored', async () => {
      for (const headers of [
        { 'X-A': 'a\r\nX-Injected: 1' },
        { 'X-A\r\nX-B': 'v' },
        { 'X-A': 'a\u0000' },
        { 'webhook-id': 'forged' },
      ]) {
        const res = await api.request('PUT', `/api/v1/app/${appId}/endpoint/${endpointId}/headers`, {
          body: { headers },
        });
        expect(res.status, JSON.stringify(headers)).toBe(422);
      }
      expect(
        (await api.request('GET', `/api/v1/app/${appId}/endpoint/${endpointId}/headers`)).body.headers,
      ).toEqual({});
    });

    it('absurd retry policies and hostile URLs: 422', async () => {
      for (const retryPolicy of [
        { backoff: { baseMs: 10, capMs: 1 } },
        { backoff: { kind: 'schedule', scheduleMs: [] } },
        { backoff: { kind: 'schedule', baseMs: 1, scheduleMs: [1] } },
        { giveUp: { maxAttempts: 0 } },
        { backoff: { baseMs: 2 ** 60 } },
        { classifier: { overrides: { abc: 'retry' } } },
        { retryAfter: { statuses: [99] } },
        { unknown: {} },
      ]) {
        const res = await api.request('POST', `/api/v1/app/${appId}/endpoint`, {
          body: { url: 'https://example.com/', retryPolicy },
        });
        expect(res.status, JSON.stringify(retryPolicy)).toBe(422);
      }
      for (const url of [
        'https://u:p@example.com/',
        'http://10.0.0.1/',
        'http://169.254.169.254/',
        'javascript:alert(1)',
        'http://[::ffff:10.0.0.1]/',
        `https://example.com/${'a'.repeat(5000)}`,
      ]) {
        const res = await api.request('POST', `/api/v1/app/${appId}/endpoint`, { body: { url } });
        expect(res.status, url).toBe(422);
      }
    });
  });
});
