/**
 * `courier apps` and `courier endpoints` end to end: the real binary against a real API on
 * PostgreSQL; an endpoint added from the shell gets a delivery, checked with the standardwebhooks
 * verifier and the secret the command printed.
 */
import { stripVTControlCharacters } from 'node:util';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.ts';
import { type Receiver, startReceiver } from '../delivery/receiver.ts';
import { createApp, startApi, type TestApi, TOKEN } from '../e2e/support.ts';
import { publishAndDeliver } from './deliver.ts';
import { HAS_SCRIPT, runCli, runOnTerminal } from './run.ts';

describe('courier apps and courier endpoints', () => {
  let api: TestApi;
  let receiver: Receiver;
  const cli = (args: string[]) => runCli(args, { env: { COURIER_URL: api.url, COURIER_TOKEN: TOKEN } });
  const rows = (stdout: string) => stdout.trimEnd().split('\n').slice(1);

  // Real time (to the second): the standardwebhooks verifier refuses a signature 5 minutes old.
  const start = Math.floor(Date.now() / 1000) * 1000;
  const created = new Date(start).toISOString().replace('T', ' ').replace('.000Z', 'Z');

  beforeAll(async () => {
    api = await startApi({ clock: new ManualClock(start) });
    receiver = await startReceiver((_req, res) => res.writeHead(200).end());
  });
  afterAll(async () => {
    await receiver.close();
    await api.close();
  });

  it('apps creates, lists and deletes applications; --get-if-exists makes create repeatable', async () => {
    const made = await cli(['apps', 'create', 'Acme Corp', '--uid', 'acme', '--rate-limit', '40']);
    expect(made).toMatchObject({ code: 0, stderr: '' });
    const [, id] = made.stdout.match(/^created (app_\w+) \(acme\)\n$/)!;
    expect((await api.request('GET', '/api/v1/app/acme')).body).toMatchObject({
      id,
      name: 'Acme Corp',
      rateLimit: 40,
    });

    const [again, repeated, asJson, other] = await Promise.all([
      cli(['apps', 'create', 'Acme Corp', '--uid', 'acme']),
      cli(['apps', 'create', 'Acme again', '--uid', 'acme', '--get-if-exists']),
      cli(['apps', 'create', 'Acme again', '--uid', 'acme', '--get-if-exists', '--json']),
      cli(['apps', 'create', 'Globex']),
    ]);
    expect(again).toMatchObject({ code: 1, stdout: '' });
    expect(again.stderr).toMatch(/^courier: .*acme.* \(conflict, HTTP 409\)\n$/);
    expect(repeated).toEqual({ code: 0, stdout: `exists ${id} (acme)\n`, stderr: '' });
    expect(JSON.parse(asJson.stdout)).toMatchObject({ id, uid: 'acme', name: 'Acme Corp' });
    expect(asJson.stderr).toBe(`courier: nothing was created: ${id} (acme) has this uid\n`);
    const [, globex] = other.stdout.match(/^created (app_\w+)\n$/)!;

    const [table, first, json] = await Promise.all([
      cli(['apps', 'list']),
      cli(['apps', 'list', '--limit', '1']),
      cli(['apps', 'list', '--json']),
    ]);
    expect(table.stdout.split('\n')[0]).toMatch(/^ID +UID +NAME +RATE LIMIT +CREATED$/);
    expect(rows(table.stdout)).toEqual([
      expect.stringMatching(new RegExp(`^${id} +acme +Acme Corp +40/s +${created}$`)),
      expect.stringMatching(new RegExp(`^${globex} +- +Globex +- +${created}$`)),
    ]);
    expect(rows(first.stdout)).toHaveLength(1);
    expect(JSON.parse(json.stdout).map((a: { id: string }) => a.id)).toEqual([id, globex]);

    expect(await cli(['apps', 'delete', 'acme'])).toEqual({ code: 0, stdout: 'deleted acme\n', stderr: '' });
    expect((await api.request('GET', '/api/v1/app/acme')).status).toBe(404);
    expect(await cli(['apps', 'delete', 'acme'])).toEqual({
      code: 1,
      stdout: '',
      stderr: 'courier: Application acme not found (not_found, HTTP 404)\n',
    });
    expect(rows((await cli(['apps', 'list'])).stdout)).toEqual([expect.stringMatching(`^${globex} `)]);
  });

  it('endpoints add makes an endpoint with its settings and prints the secret its deliveries are signed with', async () => {
    await createApp(api, { uid: 'shop' });
    const added = await cli([
      'endpoints',
      'add',
      'shop',
      `${receiver.url}/hooks`,
      '--uid',
      'main',
      '--event-type',
      'order.created',
      '--event-type',
      'order.paid,order.created',
      '--channel',
      'eu,us',
      '--description',
      'orders',
      '--rate-limit',
      '25',
      '--max-in-flight',
      '4',
      '--header',
      'Authorization: Bearer s3cret',
      '--header',
      'X-Origin:https://shop.example:8443/a',
    ]);
    expect(added).toMatchObject({ code: 0, stderr: '' });
    const [, id, secret] = added.stdout.match(/^created (ep_\w+) \(main\)\nsigning secret: (whsec_\S+)\n$/)!;
    expect((await api.request('GET', '/api/v1/app/shop/endpoint/main')).body).toMatchObject({
      id,
      url: `${receiver.url}/hooks`,
      filterTypes: ['order.created', 'order.paid'],
      channels: ['eu', 'us'],
      description: 'orders',
      rateLimit: 25,
      maxInFlight: 4,
    });
    expect((await api.request('GET', '/api/v1/app/shop/endpoint/main/secret')).body.key).toBe(secret);

    // What the command printed verifies what the endpoint receives, its headers sent with it.
    const messageId = await publishAndDeliver(api, 'shop', { eventType: 'order.created', channels: ['eu'] });
    const delivered = receiver.requests.find((r) => r.url === '/hooks');
    expect(delivered!.headers).toMatchObject({
      authorization: 'Bearer s3cret',
      'x-origin': 'https://shop.example:8443/a',
    });
    const verified = new Webhook(secret!).verify(
      delivered!.body.toString(),
      delivered!.headers as Record<string, string>,
    );
    expect(verified).toEqual({ n: 1 });
    expect(delivered!.headers['webhook-id']).toBe(messageId);

    const [chosen, asJson, chosenAsJson] = await Promise.all([
      cli([
        'endpoints',
        'add',
        'shop',
        `${receiver.url}/moved`,
        '--secret',
        'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
      ]),
      cli(['endpoints', 'add', 'shop', `${receiver.url}/json`, '--json']),
      // --json gives a secret given too: a script asked for it.
      cli([
        'endpoints',
        'add',
        'shop',
        `${receiver.url}/given`,
        '--json',
        '--secret',
        'MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
      ]),
    ]);
    expect(JSON.parse(chosenAsJson.stdout)).toMatchObject({
      url: `${receiver.url}/given`,
      secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
    });
    expect(chosen.stdout).toMatch(/^created (ep_\w+)\nsigning secret: the one given \(not shown\)\n$/);
    const chosenId = chosen.stdout.match(/^created (ep_\w+)/)![1];
    expect((await api.request('GET', `/api/v1/app/shop/endpoint/${chosenId}/secret`)).body.key).toBe(
      'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
    );
    const made = JSON.parse(asJson.stdout);
    expect(made).toMatchObject({ url: `${receiver.url}/json`, secret: expect.stringMatching(/^whsec_/) });
    expect((await api.request('GET', `/api/v1/app/shop/endpoint/${made.id}/secret`)).body.key).toBe(
      made.secret,
    );
  });

  it('endpoints pauses, resumes, shows the secret of and removes an endpoint; the list is still the default', async () => {
    await createApp(api, { uid: 'ops' });
    const added = await cli(['endpoints', 'add', 'ops', `${receiver.url}/ops`, '--uid', 'pager']);
    const [, id, secret] = added.stdout.match(/^created (ep_\w+) \(pager\)\nsigning secret: (\S+)\n$/)!;
    const status = async () => (await api.request('GET', '/api/v1/app/ops/endpoint/pager')).body.status;

    const paused = await cli(['endpoints', 'pause', 'ops', 'pager']);
    expect(paused).toEqual({
      code: 0,
      stdout: `${id} (pager): paused through the API; held by the operator\n`,
      stderr: '',
    });
    expect(await status()).toBe('paused');
    const [byDefault, byName, optionFirst] = await Promise.all([
      cli(['endpoints', 'ops']),
      cli(['endpoints', 'list', 'ops']),
      cli(['endpoints', '--json', 'ops']),
    ]);
    expect(byDefault).toMatchObject({ code: 0, stderr: '' });
    expect(byName.stdout).toBe(byDefault.stdout);
    expect(JSON.parse(optionFirst.stdout)).toEqual([expect.objectContaining({ id, status: 'paused' })]);
    expect(rows(byDefault.stdout)).toEqual([expect.stringMatching(new RegExp(`^${id} +pager +.* paused`))]);

    const resumed = await cli(['endpoints', 'resume', 'ops', 'pager', '--json']);
    expect(JSON.parse(resumed.stdout)).toMatchObject({ id, status: 'enabled', disabled: false });
    expect(await status()).toBe('enabled');

    expect(await cli(['endpoints', 'secret', 'ops', 'pager'])).toEqual({
      code: 0,
      stdout: `${secret}\n`,
      stderr: '',
    });
    expect(await cli(['endpoints', 'remove', 'ops', 'pager', '--json'])).toEqual({
      code: 0,
      stdout: '{\n  "deleted": "pager"\n}\n',
      stderr: '',
    });
    expect(await cli(['endpoints', 'pause', 'ops', 'pager'])).toEqual({
      code: 1,
      stdout: '',
      stderr: 'courier: Endpoint pager not found (not_found, HTTP 404)\n',
    });
  });

  it('endpoints update changes what is given, keeps the rest, and restores a default or every type', async () => {
    await createApp(api, { uid: 'edit' });
    await cli(['endpoints', 'add', 'edit', `${receiver.url}/a`, '--uid', 'hook', '--event-type', 'a.b']);
    const read = async (uid = 'hook2') => (await api.request('GET', `/api/v1/app/edit/endpoint/${uid}`)).body;
    const before = await read('hook');

    const moved = await cli([
      'endpoints',
      'update',
      'edit',
      'hook',
      '--new-url',
      `${receiver.url}/b`,
      '--channel',
      'eu',
      '--rate-limit',
      '7',
      '--max-in-flight',
      '3',
      '--description',
      'moved',
      '--uid',
      'hook2',
    ]);
    expect(moved).toEqual({ code: 0, stdout: `updated ${before.id} (hook2)\n`, stderr: '' });
    expect((await api.request('GET', '/api/v1/app/edit/endpoint/hook')).status).toBe(404);
    expect(await read()).toMatchObject({
      url: `${receiver.url}/b`,
      filterTypes: ['a.b'],
      channels: ['eu'],
      rateLimit: 7,
      maxInFlight: 3,
      description: 'moved',
    });

    const restored = await cli([
      'endpoints',
      'update',
      'edit',
      'hook2',
      '--all-event-types',
      '--all-channels',
      '--rate-limit',
      'default',
      '--max-in-flight',
      'default',
      '--description',
      '',
      '--json',
    ]);
    expect(restored.stderr).toBe('');
    const after = JSON.parse(restored.stdout);
    expect(after).toMatchObject({ id: before.id, uid: 'hook2', url: `${receiver.url}/b`, description: '' });
    expect(after.filterTypes ?? null).toBeNull();
    expect(after.channels ?? null).toBeNull();
    expect(after.rateLimit).toBe(before.rateLimit);
    expect(after.maxInFlight).toBe(before.maxInFlight);

    const refused = await Promise.all([
      cli(['endpoints', 'update', 'edit', 'hook2']),
      cli(['endpoints', 'update', 'edit', 'hook2', '--event-type', 'a.b', '--all-event-types']),
      cli(['endpoints', 'update', 'edit', 'hook2', '--rate-limit', 'fast']),
      cli(['endpoints', '--json', 'update', 'edit', 'hook2']),
    ]);
    expect(refused.map((run) => [run.code, run.stdout, run.stderr.split('\n')[0]])).toEqual([
      [2, '', 'courier: nothing to change: give at least one option'],
      [2, '', "error: option '--all-event-types' cannot be used with option '--event-type <type>'"],
      [
        2,
        '',
        "error: option '--rate-limit <n>' argument 'fast' is invalid. expected a positive whole number, or default.",
      ],
      [2, '', 'error: put the options after the command: courier endpoints update … edit hook2'],
    ]);
    expect(await read()).toEqual(after);
  });

  it('keeps an endpoint public-only when update moves it, unless told otherwise; add makes one', async () => {
    await createApp(api, { uid: 'pub' });
    // No delivery is made: these URLs are only saved.
    await api.request('POST', '/api/v1/app/pub/endpoint', {
      body: { url: 'https://example.com/a', uid: 'customer', publicOnly: true },
    });
    const publicOnly = async (ep: string) =>
      (await api.request('GET', `/api/v1/app/pub/endpoint/${ep}`)).body.publicOnly;
    const update = (...args: string[]) => cli(['endpoints', 'update', 'pub', 'customer', ...args]);
    expect((await update('--new-url', 'https://example.org/b')).code).toBe(0);
    expect(await publicOnly('customer')).toBe(true);
    expect((await update('--new-url', 'https://example.net/c', '--no-public-only')).code).toBe(0);
    expect(await publicOnly('customer')).toBe(false);
    expect((await update('--public-only')).code).toBe(0);
    expect(await publicOnly('customer')).toBe(true);
    const added = await cli([
      'endpoints',
      'add',
      'pub',
      'https://example.com/d',
      '--uid',
      'other',
      '--public-only',
    ]);
    expect(added.code).toBe(0);
    expect(await publicOnly('other')).toBe(true);
  });

  // Seventeen commands at once on two cores: more than the default 30 s may pass under load.
  it('refuses a bad option with exit 2 and makes nothing; the API refuses what only it can check', {
    timeout: 90_000,
  }, async () => {
    await createApp(api, { uid: 'strict' });
    const channels = Array.from({ length: 11 }, (_, i) => `c${i}`).join(',');
    const add = (...args: string[]) => cli(['endpoints', 'add', 'strict', `${receiver.url}/x`, ...args]);
    const cases: [string[], string][] = [
      [['--header', 'Authorization Bearer x'], "courier: --header: expected 'Name: value'"],
      [['--header', 'X-A: 1', '--header', 'x-a: 2'], 'courier: --header: header x-a given twice'],
      [
        ['--channel', 'eu west'],
        `option '--channel <channel>' argument 'eu west' is invalid. "eu west" is not a channel (1-128 of letters, digits and - _ . :).`,
      ],
      [
        ['--channel', channels],
        `option '--channel <channel>' argument '${channels}' is invalid. at most 10 channels on one endpoint.`,
      ],
      [
        ['--event-type', 'invoice paid'],
        `option '--event-type <type>' argument 'invoice paid' is invalid. "invoice paid" is not an event type (1-256 of letters, digits and - _ .).`,
      ],
      [
        ['--rate-limit', '0'],
        `option '--rate-limit <n>' argument '0' is invalid. expected a positive whole number.`,
      ],
      [
        ['--rate-limit', '1000001'],
        `option '--rate-limit <n>' argument '1000001' is invalid. expected at most 1,000,000.`,
      ],
      [
        ['--max-in-flight', '10001'],
        `option '--max-in-flight <n>' argument '10001' is invalid. expected at most 10,000.`,
      ],
      [
        ['--uid', 'ep_main'],
        `option '--uid <uid>' argument 'ep_main' is invalid. expected 1-256 of letters, digits and - _ ., not . or .., not starting with an id prefix such as app_.`,
      ],
      [
        ['--secret', 'not-a-secret'],
        'courier: --secret: secret is not valid base64 (expected whsec_ followed by standard base64 with its = padding)',
      ],
    ];
    const refused = await Promise.all([
      ...cases.map(([args]) => add(...args)),
      cli(['endpoints', 'add', 'strict', 'ftp://example.com/x']),
      cli(['apps', 'create', 'Zero', '--rate-limit', '-1']),
      cli(['apps', 'create', '', '--uid', 'zero']),
      cli(['apps', 'create', 'Zero', '--get-if-exists']),
      cli(['apps', 'list', '--limit', '0']),
      cli(['endpoints', 'paus', 'strict', 'main']),
    ]);
    expect(refused.map((run) => [run.code, run.stdout, run.stderr.split('\n')[0]])).toEqual(
      [
        ...cases.map(([, said]) => (said.startsWith('courier: ') ? said : `error: ${said}`)),
        `error: command-argument value 'ftp://example.com/x' is invalid for argument 'url'. expected an http(s) URL.`,
        `error: option '--rate-limit <n>' argument '-1' is invalid. expected a positive whole number.`,
        `error: command-argument value '' is invalid for argument 'name'. expected 1-256 characters.`,
        'courier: --get-if-exists finds an application by its --uid: give one',
        `error: option '--limit <n>' argument '0' is invalid. expected a positive whole number.`,
        `error: unknown command 'paus' (list takes one application)`,
      ].map((said) => [2, '', said]),
    );
    // Only the API knows its reserved header names.
    const reserved = await add('--header', 'webhook-id: mine');
    expect(reserved).toMatchObject({ code: 1, stdout: '' });
    expect(reserved.stderr).toMatch(/^courier: body\.headers.*\(validation, HTTP 422\)\n$/);
    expect((await api.request('GET', '/api/v1/app/strict/endpoint')).body.data).toEqual([]);
    expect(
      (await api.request('GET', '/api/v1/app')).body.data.map((a: { name: string }) => a.name),
    ).not.toContain('Zero');
  });

  it('says what it made when the secret cannot be read after, so a repeat does not make a second endpoint', async () => {
    // A server that makes the endpoint and then fails: Courier restarting between the two requests.
    const flaky = await startReceiver((req, res) => {
      res.setHeader('content-type', 'application/json');
      if (req.method === 'POST')
        res.writeHead(201).end('{"id":"ep_01KDX0000000000000000000000","uid":"main"}');
      else res.writeHead(503).end('{"code":"unavailable","detail":"Courier is restarting"}');
    });
    try {
      const run = (...args: string[]) =>
        runCli(['endpoints', 'add', 'shop', 'https://example.com/hooks', '--uid', 'main', ...args], {
          env: { COURIER_URL: flaky.url, COURIER_TOKEN: TOKEN },
        });
      const [table, json] = await Promise.all([run(), run('--json')]);
      const said =
        'courier: ep_01KDX0000000000000000000000 was created, but its secret could not be read ' +
        '(Courier is restarting (unavailable, HTTP 503)); `courier endpoints secret shop ep_01KDX0000000000000000000000` prints it\n';
      expect(table).toEqual({
        code: 1,
        stdout: 'created ep_01KDX0000000000000000000000 (main)\n',
        stderr: said,
      });
      expect(json).toEqual({ code: 1, stdout: '', stderr: said });
    } finally {
      await flaky.close();
    }
  });

  it.skipIf(!HAS_SCRIPT)(
    'at a terminal, apps delete and endpoints remove ask first, naming what goes; only y deletes, --yes asks nothing',
    async () => {
      // An escape sequence in the name (the API takes one) is not sent to the terminal.
      const app = await createApp(api, { uid: 'asked', name: 'Asked\u001b[31m Ltd' });
      const added = await cli(['endpoints', 'add', 'asked', `${receiver.url}/asked`, '--uid', 'main']);
      const [, endpoint] = added.stdout.match(/^created (ep_\w+)/)!;
      await cli(['endpoints', 'add', 'asked', `${receiver.url}/spare`, '--uid', 'spare']);
      await cli(['endpoints', 'add', 'asked', `${receiver.url}/logged`, '--uid', 'logged']);
      const env = { COURIER_URL: api.url, COURIER_TOKEN: TOKEN };
      // readline draws its prompt with cursor moves, and ends an answer with \r\n (shown \r\r\n).
      const asked = async (args: string[], typed: string) => {
        const run = await runOnTerminal(args, { env, typed, after: '[y/N] ' });
        return { ...run, output: stripVTControlCharacters(run.output).replace(/\r*\n/g, '\n') };
      };
      const remove = ['endpoints', 'remove', 'asked', 'main'];
      const question = `courier: delete endpoint ${endpoint} (main) of asked, ${receiver.url}/asked? [y/N] `;
      const exists = async (path: string) => (await api.request('GET', path)).status === 200;

      // What is typed, and what the terminal shows of it: Ctrl-D (\u0004) is no answer.
      for (const [typed, shown] of [
        ['n\r', 'n'],
        ['\r', ''],
        ['yess\r', 'yess'],
        ['\u0004', ''],
      ]) {
        expect(await asked(remove, typed!)).toEqual({
          code: 1,
          output: `${question}${shown}\ncourier: nothing deleted\n`,
        });
      }
      expect(await asked(remove, '\u0003')).toEqual({
        code: 130,
        output: `${question}\ncourier: interrupted\n`,
      });
      expect(await exists('/api/v1/app/asked/endpoint/main')).toBe(true);
      // A wrong name is said before any question.
      const missing = await asked(['endpoints', 'remove', 'asked', 'nope'], 'y\r');
      expect(missing).toMatchObject({
        code: 1,
        output: expect.stringMatching(/^courier: .*nope.*HTTP 404\)\n$/),
      });
      expect(await asked(remove, 'Y\r')).toEqual({ code: 0, output: `${question}Y\ndeleted main\n` });
      expect(await exists('/api/v1/app/asked/endpoint/main')).toBe(false);
      // The uid passes to another endpoint while the question waits: the one asked about goes.
      const spare = (await api.request('GET', '/api/v1/app/asked/endpoint/spare')).body.id;
      const other = await cli(['endpoints', 'add', 'asked', `${receiver.url}/other`]);
      const [, otherId] = other.stdout.match(/^created (ep_\w+)/)!;
      const moved = await runOnTerminal(['endpoints', 'remove', 'asked', 'spare'], {
        env,
        typed: 'y\r',
        after: '[y/N] ',
        meanwhile: async () => {
          const patch = (id: string, uid: string) =>
            api.request('PATCH', `/api/v1/app/asked/endpoint/${id}`, { body: { uid } });
          await patch(spare, 'was-spare');
          await patch(otherId!, 'spare');
        },
      });
      expect(moved.code).toBe(0);
      expect(await exists(`/api/v1/app/asked/endpoint/${spare}`)).toBe(false);
      expect((await api.request('GET', '/api/v1/app/asked/endpoint/spare')).body.id).toBe(otherId);
      // Nothing typed: not asked.
      expect(await asked(['endpoints', 'remove', 'asked', 'spare', '-y'], '')).toEqual({
        code: 0,
        output: 'deleted spare\n',
      });
      expect(await exists('/api/v1/app/asked/endpoint/spare')).toBe(false);
      // No one to see a question on stderr: not asked.
      const run = await runOnTerminal(['endpoints', 'remove', 'asked', 'logged'], {
        env,
        typed: '',
        after: '[y/N] ',
        stderrTo: '/dev/null',
      });
      expect(run).toEqual({ code: 0, output: 'deleted logged\r\n' });
      expect(await exists('/api/v1/app/asked/endpoint/logged')).toBe(false);

      const ops = await cli([
        'operational-endpoints',
        'add',
        `${receiver.url}/asked-ops`,
        '--uid',
        'asked-ops',
      ]);
      const [, opsId] = ops.stdout.match(/^created (ep_\w+)/)!;
      expect(await asked(['operational-endpoints', 'remove', 'asked-ops', '--json'], 'y\r')).toEqual({
        code: 0,
        output: `courier: delete operational endpoint ${opsId} (asked-ops), ${receiver.url}/asked-ops? [y/N] y\n{\n  "deleted": "asked-ops"\n}\n`,
      });

      // The operator application's question says what its deletion stops.
      const operatorApp = (await api.request('GET', '/api/v1/app/courier-operator')).body.id;
      expect(await asked(['apps', 'delete', 'courier-operator'], 'n\r')).toEqual({
        code: 1,
        output: `courier: delete application Courier operator events, ${operatorApp} (courier-operator), and its endpoints (the operational webhook endpoints: operational events then go nowhere until one is added, or a worker starts with COURIER_OPERATOR_WEBHOOK_URL)? [y/N] n\ncourier: nothing deleted\n`,
      });
      expect(await exists('/api/v1/app/courier-operator')).toBe(true);

      // A job of a shell with job control: Ctrl-Z stops it, `fg` asks again, and the answer counts.
      const resumed = await runOnTerminal(['apps', 'delete', 'asked'], {
        env,
        typed: ['\u001a', 'n\r'],
        after: '[y/N] ',
        jobControl: true,
      });
      expect(resumed.code).toBe(1);
      expect(stripVTControlCharacters(resumed.output).split('[y/N] ')).toHaveLength(3);
      expect(resumed.output).toMatch(/\ncourier: nothing deleted\r\n$/);
      expect(await asked(['apps', 'delete', 'asked'], 'no\r')).toEqual({
        code: 1,
        output: `courier: delete application Asked [31m Ltd, ${app} (asked), and its endpoints? [y/N] no\ncourier: nothing deleted\n`,
      });
      expect(await asked(['apps', 'delete', 'asked', '--yes'], '')).toEqual({
        code: 0,
        output: 'deleted asked\n',
      });
      expect(await exists('/api/v1/app/asked')).toBe(false);
    },
    120_000,
  );
});
