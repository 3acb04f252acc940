/**
 * `courier apps` and `courier endpoints` end to end: the real binary against a real API on
 * PostgreSQL; an endpoint added from the shell gets a delivery, checked with the standardwebhooks
 * verifier and the secret the command printed.
 */
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.ts';
import { type Receiver, startReceiver } from '../delivery/receiver.ts';
import { createApp, publishMessage, startApi, type TestApi, TOKEN } from '../e2e/support.ts';
import { virtualWorker } from '../support/engine.ts';
import { runCli } from './run.ts';

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
      'order.paid',
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
      'X-Team:orders',
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
    const messageId = await publishMessage(api, 'shop', { eventType: 'order.created', channels: ['eu'] });
    const engine = virtualWorker(api.db, { clock: api.clock });
    try {
      api.clock.advance(1000);
      await engine.worker.runOnce();
    } finally {
      await engine.sender.close();
    }
    const [delivered] = receiver.requests;
    expect(delivered!.headers).toMatchObject({ authorization: 'Bearer s3cret', 'x-team': 'orders' });
    const verified = new Webhook(secret!).verify(
      delivered!.body.toString(),
      delivered!.headers as Record<string, string>,
    );
    expect(verified).toEqual({ n: 1 });
    expect(delivered!.headers['webhook-id']).toBe(messageId);

    const [chosen, asJson] = await Promise.all([
      cli([
        'endpoints',
        'add',
        'shop',
        `${receiver.url}/moved`,
        '--secret',
        'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
      ]),
      cli(['endpoints', 'add', 'shop', `${receiver.url}/json`, '--json']),
    ]);
    expect(chosen.stdout).toMatch(
      /^created ep_\w+\nsigning secret: whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw\n$/,
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
    expect(paused).toEqual({ code: 0, stdout: `${id} (pager): paused through the API\n`, stderr: '' });
    expect(await status()).toBe('paused');
    const [byDefault, byName] = await Promise.all([
      cli(['endpoints', 'ops']),
      cli(['endpoints', 'list', 'ops']),
    ]);
    expect(byDefault).toMatchObject({ code: 0, stderr: '' });
    expect(byName.stdout).toBe(byDefault.stdout);
    expect(rows(byDefault.stdout)).toEqual([expect.stringMatching(new RegExp(`^${id} +pager +.* paused`))]);

    const resumed = await cli(['endpoints', 'resume', 'ops', 'pager', '--json']);
    expect(JSON.parse(resumed.stdout)).toMatchObject({ id, status: 'enabled', disabled: false });
    expect(await status()).toBe('enabled');

    expect(await cli(['endpoints', 'secret', 'ops', 'pager'])).toEqual({
      code: 0,
      stdout: `${secret}\n`,
      stderr: '',
    });
    expect(await cli(['endpoints', 'remove', 'ops', 'pager'])).toEqual({
      code: 0,
      stdout: 'deleted pager\n',
      stderr: '',
    });
    expect(await cli(['endpoints', 'pause', 'ops', 'pager'])).toEqual({
      code: 1,
      stdout: '',
      stderr: 'courier: Endpoint pager not found (not_found, HTTP 404)\n',
    });
  });

  it('refuses a bad option with exit 2 and makes nothing; the API refuses what only it can check', async () => {
    await createApp(api, { uid: 'strict' });
    const channels = Array.from({ length: 11 }, (_, i) => `c${i}`).join(',');
    const add = (...args: string[]) => cli(['endpoints', 'add', 'strict', `${receiver.url}/x`, ...args]);
    const refused = await Promise.all([
      add('--header', 'Authorization Bearer x'),
      add('--header', 'X-A: 1', '--header', 'x-a: 2'),
      add('--channel', 'eu west'),
      add('--channel', channels),
      add('--rate-limit', '0'),
      cli(['apps', 'create', 'Zero', '--rate-limit', '-1']),
      cli(['apps', 'list', '--limit', '0']),
    ]);
    expect(refused.map((run) => [run.code, run.stdout, run.stderr.split('\n')[0]])).toEqual([
      [
        2,
        '',
        `error: option '--header <header>' argument 'Authorization Bearer x' is invalid. expected 'Name: value'.`,
      ],
      [2, '', `error: option '--header <header>' argument 'x-a: 2' is invalid. header x-a given twice.`],
      [
        2,
        '',
        `error: option '--channel <channel>' argument 'eu west' is invalid. "eu west" is not a channel (1-128 of letters, digits and - _ . :).`,
      ],
      [
        2,
        '',
        `error: option '--channel <channel>' argument '${channels}' is invalid. at most 10 channels on one endpoint.`,
      ],
      [2, '', `error: option '--rate-limit <n>' argument '0' is invalid. expected a positive whole number.`],
      [2, '', `error: option '--rate-limit <n>' argument '-1' is invalid. expected a positive whole number.`],
      [2, '', `error: option '--limit <n>' argument '0' is invalid. expected a positive whole number.`],
    ]);
    const [reserved, badSecret] = await Promise.all([
      add('--header', 'webhook-id: mine'),
      add('--secret', 'not-a-secret'),
    ]);
    for (const run of [reserved, badSecret]) expect(run).toMatchObject({ code: 1, stdout: '' });
    expect(reserved.stderr).toMatch(/^courier: body\.headers.*\(validation, HTTP 422\)\n$/);
    expect(badSecret.stderr).toMatch(/^courier: body\.secret.*\(validation, HTTP 422\)\n$/);
    expect((await api.request('GET', '/api/v1/app/strict/endpoint')).body.data).toEqual([]);
    expect(
      (await api.request('GET', '/api/v1/app')).body.data.map((a: { name: string }) => a.name),
    ).not.toContain('Zero');
  });
});
