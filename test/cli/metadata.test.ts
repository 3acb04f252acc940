/**
 * --metadata and --clear-metadata of `apps create|update`, `endpoints add|update` and
 * `operational-endpoints add` end to end:
 * the real binary against a real API on PostgreSQL, what they set read back through the API.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApi, type TestApi, TOKEN } from '../e2e/support.ts';
import { runCli } from './run.ts';

describe('metadata from the shell', () => {
  let api: TestApi;
  const cli = (...args: string[]) => runCli(args, { env: { COURIER_URL: api.url, COURIER_TOKEN: TOKEN } });
  const metadataOf = async (path: string) => (await api.request('GET', `/api/v1/app/${path}`)).body.metadata;

  beforeAll(async () => {
    api = await startApi();
  });
  afterAll(async () => {
    await api.close();
  });

  it("sets an application's and an endpoint's pairs, replaces them all on update, and clears them", async () => {
    const made = await cli(
      'apps',
      'create',
      'Tagged',
      '--uid',
      'tagged',
      '--metadata',
      'plan=pro',
      '--metadata',
      'note=a=b',
      '--json',
    );
    expect(JSON.parse(made.stdout)).toMatchObject({ uid: 'tagged', metadata: { plan: 'pro', note: 'a=b' } });
    expect(await metadataOf('tagged')).toEqual({ plan: 'pro', note: 'a=b' });
    // Another change keeps them.
    expect((await cli('apps', 'update', 'tagged', '--name', 'Tagged Inc')).code).toBe(0);
    expect(await metadataOf('tagged')).toEqual({ plan: 'pro', note: 'a=b' });
    const added = await cli(
      'endpoints',
      'add',
      'tagged',
      'http://127.0.0.1:9/hook',
      '--uid',
      'main',
      '--metadata',
      'team=billing',
      '--metadata',
      'empty=',
    );
    expect(added.code).toBe(0);
    expect(await metadataOf('tagged/endpoint/main')).toEqual({ team: 'billing', empty: '' });

    // The pairs given replace every pair; the other settings stay.
    expect((await cli('apps', 'update', 'tagged', '--metadata', 'plan=team')).code).toBe(0);
    expect((await api.request('GET', '/api/v1/app/tagged')).body).toMatchObject({
      name: 'Tagged Inc',
      metadata: { plan: 'team' },
    });
    expect((await cli('endpoints', 'update', 'tagged', 'main', '--metadata', 'team=ops')).code).toBe(0);
    expect(await metadataOf('tagged/endpoint/main')).toEqual({ team: 'ops' });
    // Another change keeps them.
    expect((await cli('endpoints', 'update', 'tagged', 'main', '--description', 'ops hook')).code).toBe(0);
    expect(await metadataOf('tagged/endpoint/main')).toEqual({ team: 'ops' });

    expect((await cli('apps', 'update', 'tagged', '--clear-metadata')).code).toBe(0);
    expect(await metadataOf('tagged')).toEqual({});
    expect((await cli('endpoints', 'update', 'tagged', 'main', '--clear-metadata')).code).toBe(0);
    expect(await metadataOf('tagged/endpoint/main')).toEqual({});

    const operational = await cli(
      'operational-endpoints',
      'add',
      'http://127.0.0.1:9/ops',
      '--uid',
      'ops',
      '--metadata',
      'pager=on',
    );
    expect(operational.code).toBe(0);
    expect((await api.request('GET', '/api/v1/operational-webhook/endpoint/ops')).body.metadata).toEqual({
      pager: 'on',
    });
  });

  it('refuses a pair without a key or =, __proto__, a key given twice, too many or too long, and --metadata with --clear-metadata', async () => {
    await cli('apps', 'create', 'Bounded', '--uid', 'bounded');
    await cli('endpoints', 'add', 'bounded', 'http://127.0.0.1:9/b', '--uid', 'main');
    const invalid = (arg: string, why: string) =>
      `error: option '--metadata <pair>' argument '${arg}' is invalid. ${why}\n(add --help for usage)\n`;
    const long = `k=${'x'.repeat(4097)}`;
    const conflict =
      "error: option '--clear-metadata' cannot be used with option '--metadata <pair>'\n(add --help for usage)\n";
    const runs = await Promise.all([
      cli('apps', 'create', 'Bad', '--metadata', 'plan'),
      cli('apps', 'create', 'Bad', '--metadata', '=pro'),
      cli('apps', 'create', 'Bad', '--metadata', 'plan=a', '--metadata', 'plan=b'),
      cli('endpoints', 'add', 'bounded', 'http://127.0.0.1:9/x', '--metadata', long),
      cli('apps', 'create', 'Bad', '--metadata', '__proto__=x'),
      cli(
        'apps',
        'create',
        'Bad',
        ...Array.from({ length: 101 }, (_, i) => ['--metadata', `k${i}=v`]).flat(),
      ),
      cli('apps', 'update', 'bounded', '--metadata', 'plan=a', '--clear-metadata'),
      cli('endpoints', 'update', 'bounded', 'main', '--clear-metadata', '--metadata', 'plan=a'),
    ]);
    expect(runs.map((run) => [run.code, run.stdout, run.stderr])).toEqual([
      [2, '', invalid('plan', 'expected KEY=VALUE.')],
      [2, '', invalid('=pro', 'expected KEY=VALUE.')],
      [2, '', invalid('plan=b', 'key plan given twice.')],
      [2, '', invalid(long, 'the value of k is longer than 4096 characters.')],
      [2, '', invalid('__proto__=x', '__proto__ cannot be a key.')],
      [2, '', invalid('k100=v', 'at most 100 keys.')],
      [2, '', conflict],
      [2, '', conflict],
    ]);
    // At the bounds, taken: 100 keys; 4,096 characters, counted as the API counts them (an emoji is one).
    const hundred = Array.from({ length: 100 }, (_, i) => ['--metadata', `k${i}=v`]).flat();
    expect((await cli('apps', 'update', 'bounded', ...hundred)).code).toBe(0);
    expect(Object.keys(await metadataOf('bounded'))).toHaveLength(100);
    const longest = '🦆'.repeat(4096);
    expect((await cli('apps', 'update', 'bounded', '--metadata', `k=${longest}`)).code).toBe(0);
    expect(await metadataOf('bounded')).toEqual({ k: longest });
    const apps = (await api.request('GET', '/api/v1/app')).body.data as { name: string }[];
    expect(apps.map((a) => a.name)).not.toContain('Bad');
  });
});
