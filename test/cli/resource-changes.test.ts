/**
 * `courier apps update`, `courier endpoints headers` and `courier endpoints rotate-secret` end to
 * end: the real binary against a real API on PostgreSQL; what they change is checked through the
 * API and on a delivery (its headers, and its signatures with the standardwebhooks verifier).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.ts';
import { parseSecret } from '../../src/signing/secrets.ts';
import { type Receiver, startReceiver } from '../delivery/receiver.ts';
import { createApp, startApi, type TestApi, TOKEN } from '../e2e/support.ts';
import { publishAndDeliver, signedBy } from './deliver.ts';
import { runCli } from './run.ts';

describe('courier apps update, endpoints headers and endpoints rotate-secret', () => {
  let api: TestApi;
  let receiver: Receiver;
  const cli = (args: string[]) => runCli(args, { env: { COURIER_URL: api.url, COURIER_TOKEN: TOKEN } });
  const said = (run: { code: number | null; stdout: string; stderr: string }) => [
    run.code,
    run.stdout,
    run.stderr.split('\n')[0],
  ];

  beforeAll(async () => {
    api = await startApi({ clock: new ManualClock(Date.now()) });
    receiver = await startReceiver((_req, res) => res.writeHead(200).end());
  });
  afterAll(async () => {
    await receiver.close();
    await api.close();
  });

  /** Publishes one message to the application and delivers it; the request its endpoint at `path` got. */
  async function deliverOne(app: string, path: string) {
    const messageId = await publishAndDeliver(api, app, { eventType: 'order.created' });
    const delivered = receiver.requests.find((r) => r.url === path && r.headers['webhook-id'] === messageId);
    expect(delivered).toBeDefined();
    return delivered!;
  }

  it('apps update changes what is given, keeps the rest, and removes the rate limit with default', async () => {
    const id = await createApp(api, { name: 'North', uid: 'north', rateLimit: 30 });
    const read = async () => (await api.request('GET', '/api/v1/app/north2')).body;

    const renamed = await cli(['apps', 'update', 'north', '--name', 'North Inc', '--uid', 'north2']);
    expect(renamed).toEqual({ code: 0, stdout: `updated ${id} (north2)\n`, stderr: '' });
    expect((await api.request('GET', '/api/v1/app/north')).status).toBe(404);
    expect(await read()).toMatchObject({ id, name: 'North Inc', rateLimit: 30 });

    const limited = await cli(['apps', 'update', 'north2', '--rate-limit', '12', '--json']);
    expect(JSON.parse(limited.stdout)).toMatchObject({ id, uid: 'north2', name: 'North Inc', rateLimit: 12 });
    // Its endpoints' default: one made now takes it.
    const rateOfNew = async (uid: string) => {
      await cli(['endpoints', 'add', 'north2', `${receiver.url}/north`, '--uid', uid]);
      return (await api.request('GET', `/api/v1/app/north2/endpoint/${uid}`)).body.rateLimit;
    };
    expect(await rateOfNew('first')).toBe(12);
    const cleared = await cli(['apps', 'update', 'north2', '--rate-limit', 'default']);
    expect(cleared.code).toBe(0);
    expect(await read()).toMatchObject({ name: 'North Inc', rateLimit: null });
    expect(await rateOfNew('second')).toBe(api.config.rateLimit);
    expect((await api.request('GET', '/api/v1/app/north2/endpoint/first')).body.rateLimit).toBe(12);

    // The operator's application, made with its first operational endpoint.
    expect((await cli(['operational-endpoints', 'add', `${receiver.url}/ops`])).code).toBe(0);
    const refused = await Promise.all([
      cli(['apps', 'update', 'north2']),
      cli(['apps', 'update', 'north2', '--rate-limit', '0']),
      cli(['apps', 'update', 'north2', '--name', '']),
      cli(['apps', 'update', 'north2', '--uid', 'app_x']),
      cli(['apps', 'update', 'south', '--name', 'South']),
      cli(['apps', 'update', 'courier-operator', '--uid', 'ops']),
    ]);
    expect(refused.map(said)).toEqual([
      [2, '', 'courier: nothing to change: give at least one option'],
      [
        2,
        '',
        "error: option '--rate-limit <n>' argument '0' is invalid. expected a positive whole number, or default.",
      ],
      [2, '', "error: option '--name <name>' argument '' is invalid. expected 1-256 characters."],
      [
        2,
        '',
        "error: option '--uid <uid>' argument 'app_x' is invalid. expected 1-256 of letters, digits and - _ ., not . or .., not starting with an id prefix such as app_.",
      ],
      [1, '', 'courier: Application south not found (not_found, HTTP 404)'],
      [
        1,
        '',
        expect.stringMatching(/^courier: body\.uid: the operator application keeps its uid courier-operator/),
      ],
    ]);
    expect(await read()).toMatchObject({ name: 'North Inc', uid: 'north2', rateLimit: null });

    // The uids removed: only the ids name them then; the operator application keeps its own.
    const endpointId = (await api.request('GET', '/api/v1/app/north2/endpoint/first')).body.id;
    const unnamed = await cli(['endpoints', 'update', 'north2', 'first', '--clear-uid']);
    expect(unnamed).toEqual({ code: 0, stdout: `updated ${endpointId}\n`, stderr: '' });
    expect((await api.request('GET', `/api/v1/app/north2/endpoint/${endpointId}`)).body.uid).toBeNull();
    expect(await cli(['apps', 'update', 'north2', '--clear-uid'])).toEqual({
      code: 0,
      stdout: `updated ${id}\n`,
      stderr: '',
    });
    expect((await api.request('GET', `/api/v1/app/${id}`)).body).toMatchObject({
      uid: null,
      name: 'North Inc',
    });
    const kept = await Promise.all([
      cli(['apps', 'update', id, '--uid', 'x', '--clear-uid']),
      cli(['endpoints', 'update', id, endpointId, '--clear-uid', '--uid', 'x']),
      cli(['apps', 'update', 'courier-operator', '--clear-uid']),
    ]);
    expect(kept.map(said)).toEqual([
      [2, '', "error: option '--clear-uid' cannot be used with option '--uid <uid>'"],
      [2, '', "error: option '--clear-uid' cannot be used with option '--uid <uid>'"],
      [
        1,
        '',
        expect.stringMatching(/^courier: body\.uid: the operator application keeps its uid courier-operator/),
      ],
    ]);
  });

  it('endpoints headers prints, adds, replaces, removes and clears the headers deliveries carry', async () => {
    await createApp(api, { uid: 'hdr' });
    const added = await cli([
      'endpoints',
      'add',
      'hdr',
      `${receiver.url}/hdr`,
      '--uid',
      'main',
      '--header',
      'Authorization: Bearer t0ken',
      '--header',
      'X-A: 1',
    ]);
    expect(added.code).toBe(0);
    const headers = (...args: string[]) => cli(['endpoints', 'headers', 'hdr', 'main', ...args]);

    expect(await headers()).toEqual({
      code: 0,
      stdout: 'Authorization: (set; a credential, not shown)\nX-A: 1\n',
      stderr: '',
    });
    // Names are case-insensitive: x-a replaces X-A.
    expect(await headers('--header', 'X-B: two', '--header', 'x-a: 3')).toEqual({
      code: 0,
      stdout: 'Authorization: (set; a credential, not shown)\nx-a: 3\nX-B: two\n',
      stderr: '',
    });
    const sent = await deliverOne('hdr', '/hdr');
    expect(sent.headers).toMatchObject({ authorization: 'Bearer t0ken', 'x-a': '3', 'x-b': 'two' });

    expect(await headers('--remove', 'Authorization', '--remove', 'X-Nope')).toEqual({
      code: 0,
      stdout: 'x-a: 3\nX-B: two\n',
      stderr: 'courier: main has no header X-Nope to remove\n',
    });
    expect((await headers('--header', 'Authorization: Bearer again')).code).toBe(0);
    // A credential's value cannot be read back: what --clear removed is said (one given again is kept).
    expect(await headers('--clear', '--header', 'X-Only: 1', '--header', 'x-b: 4')).toEqual({
      code: 0,
      stdout: 'x-b: 4\nX-Only: 1\n',
      stderr:
        'courier: removed x-a\ncourier: removed Authorization (a credential: its value cannot be read back)\n',
    });
    expect(await headers('--clear', '--header', 'authorization: Bearer new')).toEqual({
      code: 0,
      stdout: 'authorization: (set; a credential, not shown)\n',
      stderr: 'courier: removed x-b\ncourier: removed X-Only\n',
    });
    // Refused: nothing was removed, and nothing is said to be.
    const refusedClear = await headers('--clear', '--header', 'webhook-id: mine');
    expect(refusedClear).toMatchObject({ code: 1, stdout: '' });
    expect(refusedClear.stderr).toMatch(/^courier: body\.headers.*\(validation, HTTP 422\)\n$/);
    const asJson = await headers('--header', 'X-Only: 1', '--json');
    expect(JSON.parse(asJson.stdout)).toEqual({ headers: { 'X-Only': '1' }, sensitive: ['authorization'] });
    expect(await headers('--clear')).toEqual({
      code: 0,
      stdout: 'main sends no headers of its own\n',
      stderr:
        'courier: removed X-Only\ncourier: removed authorization (a credential: its value cannot be read back)\n',
    });
    expect((await deliverOne('hdr', '/hdr')).headers).not.toHaveProperty('x-only');

    await headers('--header', 'X-Kept: 1');
    const refused = await Promise.all([
      headers('--header', 'X-C: 1', '--remove', 'x-c'),
      headers('--clear', '--remove', 'X-Kept'),
      headers('--remove', 'bad name'),
      headers('--header', 'webhook-id: mine'),
    ]);
    expect(refused.map(said)).toEqual([
      [2, '', 'courier: header x-c both given and removed'],
      [2, '', "error: option '--clear' cannot be used with option '--remove <name>'"],
      [
        2,
        '',
        "error: option '--remove <name>' argument 'bad name' is invalid. expected a header name (letters, digits, !#$%&'*+-.^_`|~).",
      ],
      [1, '', expect.stringMatching(/^courier: body\.headers.*webhook-id.*\(validation, HTTP 422\)$/)],
    ]);
    expect((await headers()).stdout).toBe('X-Kept: 1\n');
  }, 90_000);

  it('endpoints rotate-secret signs with a new secret and, for the grace period, with the previous one too', async () => {
    await createApp(api, { uid: 'rot' });
    const added = await cli(['endpoints', 'add', 'rot', `${receiver.url}/rot`, '--uid', 'main']);
    const [, first] = added.stdout.match(/signing secret: (\S+)\n$/)!;
    const rotate = (...args: string[]) => cli(['endpoints', 'rotate-secret', 'rot', 'main', ...args]);

    const rotated = await rotate();
    expect(rotated).toMatchObject({ code: 0, stderr: '' });
    const [, second] = rotated.stdout.match(
      /^rotated main\nsigning secret: (whsec_\S+)\nthe previous secret signs beside it for 1d\n$/,
    )!;
    expect(second).not.toBe(first);
    expect((await cli(['endpoints', 'secret', 'rot', 'main'])).stdout).toBe(`${second}\n`);
    const both = await deliverOne('rot', '/rot');
    expect([signedBy(second!, both), signedBy(first!, both)]).toEqual([true, true]);

    const chosen = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
    const third = await rotate('--secret', chosen, '--grace-period', '0', '--json');
    expect(third).toMatchObject({ code: 0, stderr: '' });
    expect(JSON.parse(third.stdout)).toEqual({ rotated: true, key: chosen, gracePeriodSeconds: 0 });
    // The second secret stopped at once; the first is still in its own day.
    const after = await deliverOne('rot', '/rot');
    expect([signedBy(chosen, after), signedBy(second!, after), signedBy(first!, after)]).toEqual([
      true,
      false,
      true,
    ]);
    // Without its prefix, as the API takes it too: the same secret.
    expect(await rotate('--secret', chosen.slice('whsec_'.length))).toEqual({
      code: 0,
      stdout: 'main already signs with this secret: nothing changed\n',
      stderr: '',
    });
    expect(JSON.parse((await rotate('--secret', chosen, '--json')).stdout)).toEqual({
      rotated: false,
      key: chosen,
    });

    // Rotated 2 h 1 min ago with 2 h of grace: the previous secret signs no more now.
    api.clock.set(Date.now() - 121 * 60_000);
    const fourth = await rotate('--grace-period', '2h');
    const [, newest] = fourth.stdout.match(
      /^rotated main\nsigning secret: (whsec_\S+)\nthe previous secret signs beside it for 2h\n$/,
    )!;
    const later = await deliverOne('rot', '/rot');
    expect([signedBy(newest!, later), signedBy(chosen, later), signedBy(first!, later)]).toEqual([
      true,
      false,
      true,
    ]);

    const refused = await Promise.all([
      rotate('--grace-period', '31d'),
      rotate('--secret', 'not-a-secret'),
      cli(['endpoints', 'rotate-secret', 'rot', 'nope']),
    ]);
    expect(refused.map(said)).toEqual([
      [
        2,
        '',
        "error: option '--grace-period <duration>' argument '31d' is invalid. expected between 0s and 30d.",
      ],
      [
        2,
        '',
        'courier: --secret: secret is not valid base64 (expected whsec_ followed by standard base64 with its = padding)',
      ],
      [1, '', 'courier: Endpoint nope not found (not_found, HTTP 404)'],
    ]);
  });

  it('says in its own terms when too many earlier secrets still sign', async () => {
    await createApp(api, { uid: 'many' });
    await cli(['endpoints', 'add', 'many', `${receiver.url}/many`, '--uid', 'main']);
    const rotate = (...args: string[]) => cli(['endpoints', 'rotate-secret', 'many', 'main', ...args]);
    // Five earlier secrets in their grace periods, beside the current one: the most there may be.
    for (let i = 0; i < 5; i++) expect((await rotate()).code).toBe(0);
    const refused = await rotate();
    expect(refused).toEqual({
      code: 1,
      stdout: '',
      stderr:
        'courier: main has as many earlier secrets still signing as it may (their grace periods are not over): ' +
        'rotate again when one ends, or with --grace-period 0, which stops its current secret at once\n',
    });
    expect(await rotate('--grace-period', '0')).toEqual({
      code: 0,
      stdout: expect.stringMatching(
        /^rotated main\nsigning secret: whsec_\S+\nthe previous secret signs nothing more\n$/,
      ),
      stderr: '',
    });
  });

  it('operational-endpoints headers and rotate-secret change an operational endpoint alike', async () => {
    const added = await cli(['operational-endpoints', 'add', `${receiver.url}/oncall`, '--uid', 'oncall']);
    const [, first] = added.stdout.match(/signing secret: (\S+)\n$/)!;
    const at = '/api/v1/operational-webhook/endpoint/oncall';

    expect(
      await cli(['operational-endpoints', 'headers', 'oncall', '--header', 'Authorization: Bearer ops']),
    ).toEqual({
      code: 0,
      stdout: 'Authorization: (set; a credential, not shown)\n',
      stderr: '',
    });
    expect((await api.request('GET', `${at}/headers`)).body).toEqual({
      headers: {},
      sensitive: ['Authorization'],
    });

    const rotated = await cli(['operational-endpoints', 'rotate-secret', 'oncall', '--grace-period', '90m']);
    const [, second] = rotated.stdout.match(
      /^rotated oncall\nsigning secret: (whsec_\S+)\nthe previous secret signs beside it for 1h30m\n$/,
    )!;
    expect(second).not.toBe(first);
    expect((await api.request('GET', `${at}/secret`)).body.key).toBe(second);
    expect(await cli(['operational-endpoints', 'rotate-secret', 'oncall', '--secret', second!])).toEqual({
      code: 0,
      stdout: 'oncall already signs with this secret: nothing changed\n',
      stderr: '',
    });
    const missing = await cli(['operational-endpoints', 'headers', 'nope']);
    expect(missing).toMatchObject({ code: 1, stdout: '' });
    expect(missing.stderr).toMatch(/^courier: .*nope.* \(not_found, HTTP 404\)\n$/);
  });

  it('says a change may have happened when the connection closes before the answer, and how to check', async () => {
    // A server that may have acted on the request and closes the connection before answering (a restart, a proxy).
    const dropping = await startReceiver((req) => req.socket.destroy());
    try {
      const run = (...args: string[]) =>
        runCli(args, { env: { COURIER_URL: dropping.url, COURIER_TOKEN: TOKEN } });
      const runs = await Promise.all([
        run('apps', 'create', 'Acme', '--uid', 'acme'),
        run('endpoints', 'add', 'shop', 'https://example.com/hooks'),
        run('endpoints', 'rotate-secret', 'shop', 'main'),
        run('apps', 'update', 'shop', '--uid', 'store'),
        run('endpoints', 'update', 'shop', 'main', '--uid', 'primary'),
      ]);
      // The key the rotation sent: repeated with it, a rotation changes nothing if the first went through.
      const rotation = dropping.requests.find((r) => r.url.endsWith('/secret/rotate'));
      const sent = JSON.parse(rotation!.body.toString());
      expect(runs.map((r) => [r.code, r.stdout, r.stderr.replace(/\(.*?\)/, '(…)')])).toEqual(
        [
          'it may have been created: `courier apps list` shows it',
          'it may have been created: `courier endpoints list shop` shows it',
          `it may have been rotated: \`courier endpoints rotate-secret shop main --secret ${sent.key} --grace-period 1d\` rotates it if not, and changes nothing if so`,
          'it may have been changed: `courier apps list` shows it',
          'it may have been changed: `courier endpoints list shop` shows it',
        ].map((hint) => [
          1,
          '',
          `courier: the connection to Courier at ${dropping.url} closed before its answer (…); ${hint}\n`,
        ]),
      );
      // The grace period is sent, a day unless given, whatever another release's API would default to;
      // the key is as strong as the API's own.
      expect(sent).toEqual({ key: expect.stringMatching(/^whsec_/), gracePeriodSeconds: 86_400 });
      expect(parseSecret(sent.key)).toHaveLength(32);
    } finally {
      await dropping.close();
    }
  });

  it('an unanswered rotation to a secret given says how to repeat it without printing the secret', async () => {
    // The secret in force is read first (it is another); the rotation's connection closes unanswered.
    const other = `whsec_${Buffer.alloc(32, 3).toString('base64')}`;
    const dropping = await startReceiver((req, res) =>
      req.method === 'GET'
        ? res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ key: other }))
        : req.socket.destroy(),
    );
    try {
      const given = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
      const run = await runCli(['endpoints', 'rotate-secret', 'shop', 'main', '--secret', given], {
        env: { COURIER_URL: dropping.url, COURIER_TOKEN: TOKEN },
      });
      expect({ ...run, stderr: run.stderr.replace(/\(.*?\)/, '(…)') }).toEqual({
        code: 1,
        stdout: '',
        stderr: `courier: the connection to Courier at ${dropping.url} closed before its answer (…); it may have been rotated: \`courier endpoints rotate-secret shop main --secret <the one given> --grace-period 1d\` rotates it if not, and changes nothing if so\n`,
      });
      expect(JSON.parse(dropping.requests.at(-1)!.body.toString())).toEqual({
        key: given,
        gracePeriodSeconds: 86_400,
      });
    } finally {
      await dropping.close();
    }
  });
});
