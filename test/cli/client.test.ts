/** The API client and the chunked replay, in process against a real API (no child processes). */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { MAX_LIMIT } from '../../src/api/pagination.ts';
import { ApiClient, apiPath, MAX_PAGE } from '../../src/cli/api-client.ts';
import { dlqReplay } from '../../src/cli/commands/dlq.ts';
import { CliError } from '../../src/cli/errors.ts';
import { type Receiver, startRawReceiver, startReceiver } from '../delivery/receiver.ts';
import { createApp, createEndpoint, startApi, type TestApi, TOKEN } from '../e2e/support.ts';
import { virtualWorker } from '../support/engine.ts';

const failureOf = (promise: Promise<unknown>) =>
  promise.then(
    () => {
      throw new Error('expected a failure');
    },
    (error: CliError) => error,
  );

describe('ApiClient', () => {
  let api: TestApi;
  let receiver: Receiver;
  let client: ApiClient;
  beforeAll(async () => {
    api = await startApi();
    // Not Courier: a proxy's HTML error page, and a 200 that is not JSON.
    receiver = await startReceiver((req, res) => {
      if (req.url?.includes('silent')) return; // never answers
      res.writeHead(req.url?.includes('proxy') ? 502 : 200, { 'content-type': 'text/html' });
      res.end('<html>hello</html>');
    });
    client = new ApiClient(`${api.url}/`, TOKEN);
  });
  afterAll(async () => {
    await receiver.close();
    await api.close();
  });

  it('gives up after its timeout, saying what the operator can do', async () => {
    const silent = new ApiClient(receiver.url, TOKEN);
    const error = await failureOf(
      silent.request('POST', '/silent', { timeoutMs: 200, timeoutHint: 'run it again later' }),
    );
    expect(error.message).toBe(`Courier at ${receiver.url} did not answer within 0.2 s; run it again later`);
    expect(error.exitCode).toBe(1);
  });

  it('takes the flags first, then the environment, and needs a token and an http(s) URL', () => {
    const env = { COURIER_URL: 'http://env:1', COURIER_TOKEN: 'env-token', COURIER_ADMIN_TOKEN: 'admin' };
    expect(ApiClient.connect({ url: 'https://flag:2/' }, env).url).toBe('https://flag:2');
    expect(ApiClient.connect({}, env).url).toBe('http://env:1');
    expect(ApiClient.connect({}, { COURIER_ADMIN_TOKEN: 'admin' }).url).toBe('http://127.0.0.1:8080');
    // An empty COURIER_URL is unset; the API address `courier serve` prints works as it is.
    expect(ApiClient.connect({}, { COURIER_URL: '', COURIER_TOKEN: 't' }).url).toBe('http://127.0.0.1:8080');
    expect(ApiClient.connect({}, { COURIER_URL: 'http://h:8080/api/v1', COURIER_TOKEN: 't' }).url).toBe(
      'http://h:8080',
    );
    for (const [options, environment, message] of [
      [{}, {}, /^no API token/],
      [{}, { COURIER_TOKEN: '' }, /^no API token/],
      [{ url: 'localhost:8080', token: 't' }, {}, /^invalid --url "localhost:8080"/],
      [{ token: 't' }, { COURIER_URL: 'ftp://h' }, /^invalid COURIER_URL "ftp:\/\/h"/],
      [{ url: 'http://user:pw@h:8080', token: 't' }, {}, /^invalid --url: credentials in the URL/],
      [{ token: 'tok\u2026en' }, {}, /^the API token must be printable ASCII/],
    ] as const) {
      const error = (() => {
        try {
          ApiClient.connect(options, environment);
        } catch (e) {
          return e as CliError;
        }
      })();
      expect(error).toBeInstanceOf(CliError);
      expect(error).toMatchObject({ exitCode: 2, message: expect.stringMatching(message) });
    }
  });

  it('goes, without a URL given, where `courier serve` listens with the same settings', () => {
    const url = (env: Record<string, string>) => ApiClient.connect({ token: 't' }, env).url;
    expect(url({ COURIER_PORT: '9090' })).toBe('http://127.0.0.1:9090');
    expect(url({ COURIER_PORT: '9090', COURIER_HOST: '10.1.2.3' })).toBe('http://10.1.2.3:9090');
    // A wildcard address is reached on loopback.
    expect(url({ COURIER_HOST: '0.0.0.0' })).toBe('http://127.0.0.1:8080');
    expect(url({ COURIER_HOST: '::' })).toBe('http://[::1]:8080');
    const dir = mkdtempSync(join(tmpdir(), 'courier-cli-'));
    const file = join(dir, 'courier.json');
    writeFileSync(file, JSON.stringify({ COURIER_PORT: 7070 }));
    expect(url({ COURIER_CONFIG: file })).toBe('http://127.0.0.1:7070');
    expect(url({ COURIER_CONFIG: file, COURIER_PORT: '7171' })).toBe('http://127.0.0.1:7171');
    rmSync(dir, { recursive: true });
    for (const [env, message] of [
      [
        { COURIER_PORT: 'tcp://10.0.0.1:8080' },
        /^COURIER_PORT: got "tcp:.*; or give the API's address with --url/,
      ],
      [{ COURIER_PORT: '0' }, /^COURIER_PORT is 0/],
      [{ COURIER_CONFIG: join(tmpdir(), 'no-such-courier.json') }, /^COURIER_CONFIG: cannot read/],
    ] as const) {
      expect(() => url(env)).toThrow(CliError);
      expect(() => url(env)).toThrow(message);
    }
  });

  it('refuses . and .. as names: URL parsing would turn them into another route', () => {
    for (const name of ['.', '..']) {
      expect(() => apiPath('app', 'acme', 'msg', name, 'endpoint')).toThrow(CliError);
    }
    expect(apiPath('app', 'a.b', 'msg', '...')).toBe('/api/v1/app/a.b/msg/...');
  });

  it('walks every page of a list', async () => {
    const appId = await createApp(api);
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      ids.push((await createEndpoint(api, appId, { url: `https://example.com/${i}` })).id);
    }
    const path = apiPath('app', appId, 'endpoint');
    const all = await client.list<{ id: string }>(path, { limit: 2, order: 'ascending' });
    expect(all.map((e) => e.id)).toEqual(ids);
    const asked = vi.spyOn(client, 'request');
    expect((await client.list<{ id: string }>(path, { limit: 2 }, 3)).map((e) => e.id)).toEqual(
      [...ids].reverse().slice(0, 3),
    );
    // No page larger than what is still wanted.
    expect(asked.mock.calls.map(([, , options]) => options?.query?.limit)).toEqual([2, 1]);
    asked.mockClear();
    await client.list(path);
    // The API's largest page, which the CLI keeps a copy of (it does not load the API's modules).
    expect(asked.mock.calls.map(([, , options]) => options?.query?.limit)).toEqual([MAX_LIMIT]);
    expect(MAX_PAGE).toBe(MAX_LIMIT);
    asked.mockClear();
    expect(await client.list(path, {}, 0)).toEqual([]);
    expect(asked).not.toHaveBeenCalled();
    asked.mockRestore();
  });

  it("turns the API's errors into one readable line (exit 1)", async () => {
    const validation = await failureOf(
      client.request('POST', apiPath('app'), { body: { name: 'x', uid: 'app_bad', rateLimit: 'fast' } }),
    );
    expect(validation).toMatchObject({ exitCode: 1 });
    expect(validation.message).toMatch(
      /^body\.uid: must be .*; body\.rateLimit: must be integer.* \(validation, HTTP 422\)$/,
    );
    const proxy = await failureOf(new ApiClient(`${receiver.url}/proxy`, 't').request('GET', '/api/v1/app'));
    expect(proxy.message).toBe(`HTTP 502 Bad Gateway from ${receiver.url}/proxy/api/v1/app`);
    const other = await failureOf(new ApiClient(receiver.url, 't').request('GET', '/api/v1/app'));
    expect(other.message).toBe(`${receiver.url} answered HTTP 200 without JSON: is it Courier?`);
  });

  it('says the connection closed when it does so in the middle of the answer’s body', async () => {
    // Its head and the start of its JSON sent, then the connection cut (a restart, a proxy's timeout).
    const cutter = await startRawReceiver((socket) =>
      socket.write(
        'HTTP/1.1 202 Accepted\r\ncontent-type: application/json\r\ncontent-length: 200\r\n\r\n{"id":"msg_',
        () => setTimeout(() => socket.destroy(), 20),
      ),
    );
    const url = `http://127.0.0.1:${cutter.port}`;
    const error = await failureOf(
      new ApiClient(url, TOKEN).request('POST', apiPath('app', 'acme', 'msg'), {
        body: { eventType: 'e', payload: {} },
        droppedHint: 'it may have been published',
      }),
    ).finally(() => cutter.close());
    expect(error.exitCode).toBe(1);
    const [what, advice] = error.message.split('; ');
    expect(what!.startsWith(`the connection to Courier at ${url} closed before its answer (`)).toBe(true);
    expect(advice).toBe('it may have been published');
  });
});

describe('dlq replay', () => {
  let api: TestApi;
  let receiver: Receiver;
  let gone = true;
  beforeAll(async () => {
    api = await startApi();
    receiver = await startReceiver((_req, res) => {
      res.writeHead(gone ? 410 : 200);
      res.end();
    });
  });
  afterAll(async () => {
    await receiver.close();
    await api.close();
  });

  /** An endpoint with 150 dead letters (410s), its receiver answering 200 again afterwards. */
  async function deadLetters150() {
    const appId = await createApp(api);
    const ep = await createEndpoint(api, appId, { url: `${receiver.url}/hook` });
    for (let i = 0; i < 150; i++) {
      await api.request('POST', `/api/v1/app/${appId}/msg`, { body: { eventType: 'e', payload: { i } } });
    }
    gone = true;
    // 150 permanent failures in a row would pause the endpoint at the default 100.
    const engine = virtualWorker(api.db, { clock: api.clock, pauseAfter: 1000 });
    for (let round = 0; round < 20; round++) {
      api.clock.advance(1000);
      if ((await engine.worker.runOnce()) === 0) break;
    }
    await engine.sender.close();
    gone = false;
    return { appId, ep };
  }

  it('replays in chunks, advancing a progress bar on a terminal', async () => {
    const { appId, ep } = await deadLetters150();

    const out: string[] = [];
    const err: string[] = [];
    const stdout = vi
      .spyOn(process.stdout, 'write')
      .mockImplementation((chunk) => out.push(String(chunk)) > 0);
    const stderr = vi
      .spyOn(process.stderr, 'write')
      .mockImplementation((chunk) => err.push(String(chunk)) > 0);
    const tty = Object.getOwnPropertyDescriptor(process.stderr, 'isTTY');
    Object.defineProperty(process.stderr, 'isTTY', { value: true, configurable: true });
    try {
      await dlqReplay(appId, ep.id, { url: api.url, token: TOKEN });
    } finally {
      stdout.mockRestore();
      stderr.mockRestore();
      if (tty) Object.defineProperty(process.stderr, 'isTTY', tty);
      else delete (process.stderr as { isTTY?: boolean }).isTTY;
    }
    // One draw before the first chunk, one after each of the two chunks (100 + 50), then erased.
    expect(err.map((e) => /\d+\/150/.exec(e)?.[0] ?? e)).toEqual([
      '0/150',
      '100/150',
      '150/150',
      '\r\u001b[K',
    ]);
    expect(out).toEqual(['replayed 150 deliveries\n']);
    const { rows } = await api.db.query<{ state: string; n: number }>(
      'select state, count(*)::int as n from courier_deliveries where endpoint_id = $1 group by state',
      [ep.id],
    );
    expect(rows).toEqual([{ state: 'pending', n: 150 }]);
  });

  it('says how many a replay had replayed when a later chunk fails', async () => {
    const { appId, ep } = await deadLetters150();
    // The second replay chunk never reaches Courier.
    const realFetch = globalThis.fetch;
    let replays = 0;
    const fetch = vi.spyOn(globalThis, 'fetch').mockImplementation((input, init) => {
      if (String(input).endsWith('/dead-letter/replay') && ++replays === 2) {
        return Promise.reject(new TypeError('fetch failed'));
      }
      return realFetch(input, init);
    });
    try {
      const error = await dlqReplay(appId, ep.id, { url: api.url, token: TOKEN }).catch((e: CliError) => e);
      expect(error).toBeInstanceOf(CliError);
      expect(error).toMatchObject({
        exitCode: 1,
        message: expect.stringMatching(/; 100 deliveries replayed before that$/),
      });
    } finally {
      fetch.mockRestore();
    }
  });
});
