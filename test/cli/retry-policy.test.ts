/**
 * --retry-policy of `apps create|update` and `endpoints add|update` end to end: the real binary
 * against a real API on PostgreSQL, what it sets read back through the API and followed by a
 * worker's decisions on a real receiver's answers.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Receiver, startReceiver } from '../delivery/receiver.ts';
import { startApi, type TestApi, TOKEN } from '../e2e/support.ts';
import { publishAndDeliver } from './deliver.ts';
import { runCli } from './run.ts';

describe('the retry policy from the shell', () => {
  let api: TestApi;
  let receiver: Receiver;
  let dir: string;
  const env = () => ({ COURIER_URL: api.url, COURIER_TOKEN: TOKEN });
  const cli = (...args: string[]) => runCli(args, { env: env() });
  const piped = (stdin: string, ...args: string[]) => runCli(args, { env: env(), stdin });
  const policyOf = async (path: string) => (await api.request('GET', `/api/v1/app/${path}`)).body.retryPolicy;
  /** What the worker decided after the latest attempt at the endpoint. */
  const lastDecision = async (app: string, endpoint: string) => {
    const { body } = await api.request('GET', `/api/v1/app/${app}/attempt/endpoint/${endpoint}`);
    const [latest] = body.data as { decision: string; detail: string }[];
    return latest!.decision;
  };

  beforeAll(async () => {
    api = await startApi();
    // Every delivery is answered 500: retried by default, permanent where a policy says so.
    receiver = await startReceiver((_req, res) => res.writeHead(500).end());
    dir = await mkdtemp(join(tmpdir(), 'courier-policy-'));
  });
  afterAll(async () => {
    await receiver.close();
    await api.close();
    await rm(dir, { recursive: true, force: true });
  });

  it("sets an endpoint's overrides inline, from a file and from standard input, and the worker follows them", async () => {
    const permanent500 = { classifier: { overrides: { '500': 'permanent' } } };
    expect((await cli('apps', 'create', 'Strict', '--uid', 'strict')).code).toBe(0);
    const added = await cli(
      'endpoints',
      'add',
      'strict',
      `${receiver.url}/a`,
      '--uid',
      'main',
      '--retry-policy',
      JSON.stringify(permanent500),
    );
    expect(added).toMatchObject({ code: 0, stderr: '' });
    expect(await policyOf('strict/endpoint/main')).toEqual(permanent500);
    await publishAndDeliver(api, 'strict', { eventType: 'order.created' });
    expect(await lastDecision('strict', 'main')).toBe('failed');

    const file = join(dir, 'policy.json');
    const fewer = { giveUp: { maxAttempts: 3 } };
    // With the BOM some editors write.
    await writeFile(file, `\uFEFF${JSON.stringify(fewer, null, 2)}\n`);
    const filed = await cli('endpoints', 'update', 'strict', 'main', '--retry-policy', `@${file}`, '--json');
    expect(filed.code).toBe(0);
    // Replaced, not merged: the 500 is retried again.
    expect(JSON.parse(filed.stdout).retryPolicy).toEqual(fewer);
    await publishAndDeliver(api, 'strict', { eventType: 'order.created' });
    expect(await lastDecision('strict', 'main')).toBe('retry');

    const lenient = { classifier: { mode: 'lenient' } };
    expect(
      (await piped(JSON.stringify(lenient), 'endpoints', 'update', 'strict', 'main', '--retry-policy', '@-'))
        .code,
    ).toBe(0);
    expect(await policyOf('strict/endpoint/main')).toEqual(lenient);
    expect((await cli('endpoints', 'update', 'strict', 'main', '--retry-policy', 'default')).code).toBe(0);
    expect(await policyOf('strict/endpoint/main')).toBeNull();
  });

  it("sets an application's overrides, which its endpoints take at their next attempt, their own over them", async () => {
    const made = await cli(
      'apps',
      'create',
      'Layered',
      '--uid',
      'layered',
      '--retry-policy',
      '{"giveUp": {"maxAttempts": 1}}',
    );
    expect(made.code).toBe(0);
    expect(await policyOf('layered')).toEqual({ giveUp: { maxAttempts: 1 } });
    expect((await cli('endpoints', 'add', 'layered', `${receiver.url}/b`, '--uid', 'main')).code).toBe(0);
    await publishAndDeliver(api, 'layered', { eventType: 'order.created' });
    expect(await lastDecision('layered', 'main')).toBe('expired');
    expect((await cli('endpoints', 'policy', 'layered', 'main')).stdout).toContain(
      '\ngive up      after 1 attempt or 3d after the first\n',
    );

    // The application's new overrides reach the endpoint made before them.
    const updated = await cli(
      'apps',
      'update',
      'layered',
      '--retry-policy',
      '{"classifier": {"overrides": {"500": "permanent"}}}',
    );
    expect(updated.code).toBe(0);
    await publishAndDeliver(api, 'layered', { eventType: 'order.created' });
    expect(await lastDecision('layered', 'main')).toBe('failed');

    // The endpoint's own verdict wins over the application's.
    const own = '{"classifier": {"overrides": {"500": "retry"}}}';
    expect((await cli('endpoints', 'update', 'layered', 'main', '--retry-policy', own)).code).toBe(0);
    await publishAndDeliver(api, 'layered', { eventType: 'order.created' });
    expect(await lastDecision('layered', 'main')).toBe('retry');

    expect((await cli('apps', 'update', 'layered', '--retry-policy', 'default')).code).toBe(0);
    expect(await policyOf('layered')).toBeNull();
  });

  it('prints the policy an endpoint follows in words, and the overrides that make it', async () => {
    expect(
      (
        await cli(
          'apps',
          'create',
          'Shown',
          '--uid',
          'shown',
          '--retry-policy',
          '{"giveUp": {"maxAttempts": 5}}',
        )
      ).code,
    ).toBe(0);
    const own =
      '{"classifier": {"overrides": {"404": "permanent"}}, "backoff": {"scheduleMs": [5000, 300000], "jitter": "none"}}';
    expect(
      (
        await cli(
          'endpoints',
          'add',
          'shown',
          `${receiver.url}/shown`,
          '--uid',
          'main',
          '--retry-policy',
          own,
        )
      ).code,
    ).toBe(0);
    expect((await cli('endpoints', 'add', 'shown', `${receiver.url}/plain`, '--uid', 'plain')).code).toBe(0);
    const shown = await cli('endpoints', 'policy', 'shown', 'main');
    expect(shown).toEqual({
      code: 0,
      stderr: '',
      stdout: [
        'classify     strict: 400, 401, 403, 410 and 422 fail at once; other failed answers and network errors are retried; by status: 404 permanent',
        'backoff      the schedule 5s, 5m (its last delay repeats), no jitter',
        'retry-after  honoured on 429, 503, up to 1d',
        'give up      after 5 attempts or 3d after the first',
        `overrides    application {"giveUp":{"maxAttempts":5}}; endpoint ${JSON.stringify(JSON.parse(own))}`,
        '',
      ].join('\n'),
    });
    await cli('apps', 'update', 'shown', '--retry-policy', 'default');
    const plain = await cli('endpoints', 'policy', 'shown', 'plain');
    expect(plain.stdout).toBe(
      [
        'classify     strict: 400, 401, 403, 410 and 422 fail at once; other failed answers and network errors are retried',
        'backoff      1m doubling to 1h, equal jitter',
        'retry-after  honoured on 429, 503, up to 1d',
        'give up      after 16 attempts or 3d after the first',
        "overrides    none: the installation's policy (COURIER_RETRY_*)",
        '',
      ].join('\n'),
    );
    const lenient = '{"classifier": {"mode": "lenient"}, "retryAfter": {"statuses": []}}';
    await cli('endpoints', 'update', 'shown', 'plain', '--retry-policy', lenient);
    const json = await cli('endpoints', 'policy', 'shown', 'plain', '--json');
    expect(JSON.parse(json.stdout)).toEqual(
      (await api.request('GET', '/api/v1/app/shown/endpoint/plain/retry-policy')).body,
    );
    const words = (await cli('endpoints', 'policy', 'shown', 'plain')).stdout.split('\n');
    expect(words[0]).toBe('classify     lenient: every failed answer and network error is retried, 4xx too');
    expect(words[2]).toBe('retry-after  never honoured');
    expect(words[4]).toBe(`overrides    application none; endpoint ${JSON.stringify(JSON.parse(lenient))}`);
    // {} overrides nothing, as null does.
    await cli('endpoints', 'update', 'shown', 'plain', '--retry-policy', '{}');
    expect((await cli('endpoints', 'policy', 'shown', 'plain')).stdout).toContain(
      "\noverrides    none: the installation's policy (COURIER_RETRY_*)\n",
    );
    const missing = await cli('endpoints', 'policy', 'shown', 'nowhere');
    expect(missing).toMatchObject({
      code: 1,
      stdout: '',
      stderr: expect.stringMatching(/^courier: Endpoint nowhere not found/),
    });
  });

  it('refuses what is not a JSON object before sending anything, and prints the API refusal of a policy that would not build', async () => {
    expect((await cli('apps', 'create', 'Kept', '--uid', 'kept')).code).toBe(0);
    expect((await cli('endpoints', 'add', 'kept', `${receiver.url}/c`, '--uid', 'main')).code).toBe(0);
    const invalid = (arg: string, why: string) =>
      `error: option '--retry-policy <json>' argument '${arg}' is invalid. ${why}\n(add --help for usage)\n`;
    const object = `expected a JSON object, such as '{"giveUp": {"maxAttempts": 5}}'`;
    const missing = join(dir, 'missing.json');
    const notJson = join(dir, 'not.json');
    await writeFile(notJson, 'giveUp: 3\n');
    const runs = await Promise.all([
      cli('apps', 'create', 'Bad', '--retry-policy', '{giveUp: 3}'),
      cli('apps', 'create', 'Bad', '--retry-policy', '[]'),
      cli('apps', 'create', 'Bad', '--retry-policy', 'null'),
      cli('endpoints', 'add', 'kept', `${receiver.url}/bad`, '--retry-policy', '"default"'),
      cli('endpoints', 'update', 'kept', 'main', '--retry-policy', '5'),
      cli('apps', 'create', 'Bad', '--retry-policy', '{"giveUp": {"__proto__": {"maxAttempts": 1}}}'),
      cli('apps', 'create', 'Bad', '--retry-policy', `@${missing}`),
      cli('apps', 'create', 'Bad', '--retry-policy', `@${notJson}`),
      cli('apps', 'create', 'Bad', '--retry-policy', '@'),
      cli('apps', 'update', 'kept', '--retry-policy', `@${notJson}`),
      cli('endpoints', 'update', 'kept', 'main', '--retry-policy', 'defualt'),
      piped(
        '{}',
        'endpoints',
        'add',
        'kept',
        `${receiver.url}/bad`,
        '--retry-policy',
        '@-',
        '--header',
        '@-',
      ),
    ]);
    expect(runs.map((run) => [run.code, run.stdout, run.stderr])).toEqual([
      [
        2,
        '',
        expect.stringMatching(
          /^error: option '--retry-policy <json>' argument '\{giveUp: 3\}' is invalid\. not JSON: .+\.\n/,
        ),
      ],
      [2, '', invalid('[]', `${object}.`)],
      [2, '', invalid('null', `${object}.`)],
      [2, '', invalid('"default"', `${object}.`)],
      [2, '', invalid('5', `${object}, or default.`)],
      [2, '', invalid('{"giveUp": {"__proto__": {"maxAttempts": 1}}}', '__proto__ cannot be a key.')],
      [2, '', expect.stringContaining(`argument '@${missing}' is invalid. cannot read ${missing}: ENOENT`)],
      [
        2,
        '',
        invalid(
          `@${notJson}`,
          `not JSON in ${notJson}: Unexpected token 'g', "giveUp: 3\\n" is not valid JSON.`,
        ),
      ],
      [2, '', invalid('@', 'expected @FILE, or @- for standard input.')],
      // ", or default" where the value typed is wrong, not after a file's error.
      [
        2,
        '',
        invalid(
          `@${notJson}`,
          `not JSON in ${notJson}: Unexpected token 'g', "giveUp: 3\\n" is not valid JSON.`,
        ),
      ],
      [2, '', invalid('defualt', `not JSON: Unexpected token 'd', "defualt" is not valid JSON, or default.`)],
      [
        2,
        '',
        invalid('@-', 'standard input is already taken by --retry-policy @-.').replace(
          '--retry-policy <json>',
          '--header <header>',
        ),
      ],
    ]);

    // Well-formed JSON the API refuses: its field named, exit 1, nothing changed.
    const refused = await Promise.all([
      cli('endpoints', 'update', 'kept', 'main', '--retry-policy', '{"giveUp": {"maxAttempts": 0}}'),
      cli('endpoints', 'update', 'kept', 'main', '--retry-policy', '{"backoff": {"baseMs": 0}}'),
      cli('apps', 'update', 'kept', '--retry-policy', '{"backoff": {"baseMs": 120000, "capMs": 60000}}'),
      cli('apps', 'create', 'Bad', '--retry-policy', '{"retries": 3}'),
    ]);
    expect(refused.map((run) => [run.code, run.stdout])).toEqual(Array(4).fill([1, '']));
    expect(refused.map((run) => run.stderr)).toEqual([
      'courier: body.retryPolicy.giveUp.maxAttempts: must be >= 1 (validation, HTTP 422)\n',
      'courier: body.retryPolicy: backoff.baseMs must be an integer from 1 to 3155760000000 (milliseconds), got 0 (validation, HTTP 422)\n',
      'courier: body.retryPolicy: backoff.capMs must be an integer from 120000 to 3155760000000 (milliseconds, not below backoff.baseMs), got 60000 (validation, HTTP 422)\n',
      'courier: body.retryPolicy.retries: is not a field here (validation, HTTP 422)\n',
    ]);
    expect(await policyOf('kept')).toBeNull();
    expect(await policyOf('kept/endpoint/main')).toBeNull();
    const apps = (await api.request('GET', '/api/v1/app')).body.data as { name: string }[];
    expect(apps.map((a) => a.name)).not.toContain('Bad');
    const endpoints = (await api.request('GET', '/api/v1/app/kept/endpoint')).body.data as unknown[];
    expect(endpoints).toHaveLength(1);
  });
});
