/**
 * Credentials kept out of `ps` and the shell's history: `--secret -` and `--header @FILE` / `@-`
 * end to end, the real binary against a real API on PostgreSQL; what they set is checked on
 * deliveries (their headers, and their signatures with the standardwebhooks verifier).
 */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.ts';
import { type Receiver, startReceiver } from '../delivery/receiver.ts';
import { createApp, startApi, type TestApi, TOKEN } from '../e2e/support.ts';
import { deliverDue, publishAndDeliver, signedBy } from './deliver.ts';
import { HAS_SCRIPT, runCli, runOnTerminal } from './run.ts';

describe('credentials from a file or standard input', () => {
  let api: TestApi;
  let receiver: Receiver;
  let dir: string;
  const piped = (stdin: string, ...args: string[]) =>
    runCli(args, { env: { COURIER_URL: api.url, COURIER_TOKEN: TOKEN }, stdin });
  const cli = (...args: string[]) => piped('', ...args);

  beforeAll(async () => {
    api = await startApi({ clock: new ManualClock(Date.now()) });
    receiver = await startReceiver((_req, res) => res.writeHead(200).end());
    dir = await mkdtemp(join(tmpdir(), 'courier-headers-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
    await receiver.close();
    await api.close();
  });

  const lastAt = (path: string) => receiver.requests.filter((r) => r.url === path).at(-1);

  it('--header @FILE and @- read Name: value lines, blank ones and comments skipped, beside inline ones', async () => {
    await createApp(api, { uid: 'filed' });
    const file = join(dir, 'acme.headers');
    await writeFile(file, "# acme's receiver\r\nAuthorization: Bearer s3cret\r\n\r\n  X-Tenant:  42 \r\n");
    const added = await cli(
      'endpoints',
      'add',
      'filed',
      `${receiver.url}/filed`,
      '--uid',
      'main',
      '--header',
      `@${file}`,
      '--header',
      'X-Region: eu',
    );
    expect(added).toMatchObject({ code: 0, stderr: '' });
    await publishAndDeliver(api, 'filed', { eventType: 'order.created' });
    expect(lastAt('/filed')?.headers).toMatchObject({
      authorization: 'Bearer s3cret',
      'x-tenant': '42',
      'x-region': 'eu',
    });

    const changed = await piped(
      'Authorization: Bearer n3w\nX-Tenant: 43\n',
      'endpoints',
      'headers',
      'filed',
      'main',
      '--header',
      '@-',
      '--remove',
      'X-Region',
    );
    expect(changed).toEqual({
      code: 0,
      stdout: 'Authorization: (set; a credential, not shown)\nX-Tenant: 43\n',
      stderr: '',
    });
    await publishAndDeliver(api, 'filed', { eventType: 'order.created' });
    expect(lastAt('/filed')?.headers).toMatchObject({ authorization: 'Bearer n3w', 'x-tenant': '43' });
    expect(lastAt('/filed')?.headers['x-region']).toBeUndefined();
  });

  it('refuses an unreadable or malformed file, a name given twice, and standard input read twice, quoting no value', async () => {
    await createApp(api, { uid: 'refused' });
    await cli('endpoints', 'add', 'refused', `${receiver.url}/refused`, '--uid', 'main');
    const bad = join(dir, 'bad.headers');
    await writeFile(bad, 'X-Tenant: 42\nBearer s3cret\n');
    const twice = join(dir, 'twice.headers');
    await writeFile(twice, '# none yet\nx-tenant: 41\n');
    const empty = join(dir, 'empty.headers');
    await writeFile(empty, '# nothing\n\n');
    const headers = (...args: string[]) => ['endpoints', 'headers', 'refused', 'main', ...args];
    const invalid = (arg: string, why: string) =>
      `error: option '--header <header>' argument '${arg}' is invalid. ${why}\n(add --help for usage)\n`;
    const runs = await Promise.all([
      cli(...headers('--header', `@${join(dir, 'missing')}`)),
      cli(...headers('--header', `@${bad}`)),
      cli(...headers('--header', 'X-Tenant: 40', '--header', `@${twice}`)),
      cli(...headers('--header', `@${empty}`)),
      cli(...headers('--header', '@')),
      piped('', ...headers('--header', '@-')),
      piped('X-Tenant: 1\n', ...headers('--header', '@-', '--header', '@-')),
      piped(
        'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw\n',
        'endpoints',
        'add',
        'refused',
        `${receiver.url}/x`,
        '--secret',
        '-',
        '--header',
        '@-',
      ),
      piped(
        'X-Tenant: 1\n',
        'endpoints',
        'add',
        'refused',
        `${receiver.url}/x`,
        '--header',
        '@-',
        '--secret',
        '-',
      ),
    ]);
    expect(runs.map((run) => [run.code, run.stdout, run.stderr])).toEqual([
      [
        2,
        '',
        invalid(
          `@${join(dir, 'missing')}`,
          `cannot read ${join(dir, 'missing')}: ENOENT: no such file or directory, open '${join(dir, 'missing')}'.`,
        ),
      ],
      [2, '', invalid(`@${bad}`, `line 2 of ${bad}: expected 'Name: value'.`)],
      [2, '', invalid(`@${twice}`, `line 2 of ${twice}: header x-tenant given twice.`)],
      [2, '', invalid(`@${empty}`, `${empty} holds no 'Name: value' line.`)],
      [2, '', invalid('@', 'expected @FILE, or @- for standard input.')],
      [2, '', invalid('@-', "standard input holds no 'Name: value' line.")],
      [2, '', invalid('@-', 'standard input is already taken by --header @-.')],
      [2, '', invalid('@-', 'standard input is already taken by --secret -.')],
      [
        2,
        '',
        "error: option '--secret <secret>' argument '-' is invalid. standard input is already taken by --header @-.\n(add --help for usage)\n",
      ],
    ]);
    // Nothing changed, nothing made.
    expect((await api.request('GET', '/api/v1/app/refused/endpoint/main/headers')).body).toEqual({
      headers: {},
      sensitive: [],
    });
    expect((await api.request('GET', '/api/v1/app/refused/endpoint')).body.data).toHaveLength(1);
  });

  it('reads --secret - from standard input, out of ps, for rotate-secret and add', async () => {
    await createApp(api, { uid: 'quiet' });
    const first = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
    const added = await piped(
      `${first}\n`,
      'endpoints',
      'add',
      'quiet',
      `${receiver.url}/quiet`,
      '--uid',
      'main',
      '--secret',
      '-',
    );
    // Given, so not printed: it came unseen, and a script's log would keep it.
    expect(added).toMatchObject({
      code: 0,
      stdout: expect.stringMatching(
        /^created ep_\w+ \(main\)\nsigning secret: the one given \(not shown\)\n$/,
      ),
    });
    expect((await api.request('GET', '/api/v1/app/quiet/endpoint/main/secret')).body.key).toBe(first);
    // Without its prefix, as --secret takes it: sent in the API's form.
    const second = 'whsec_QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo=';
    const rotated = await piped(
      `  ${second.slice('whsec_'.length)}\n`,
      'endpoints',
      'rotate-secret',
      'quiet',
      'main',
      '--secret',
      '-',
    );
    expect(rotated).toMatchObject({
      code: 0,
      stdout: expect.stringMatching(/^rotated main\nsigning secret: the one given \(not shown\)\n/),
    });
    expect((await api.request('GET', '/api/v1/app/quiet/endpoint/main/secret')).body.key).toBe(second);
    expect(
      await piped('not a secret', 'endpoints', 'rotate-secret', 'quiet', 'main', '--secret', '-'),
    ).toEqual({
      code: 2,
      stdout: '',
      stderr:
        'courier: the secret on standard input: secret is not valid base64 (expected whsec_ followed by standard base64 with its = padding)\n',
    });
    expect((await api.request('GET', '/api/v1/app/quiet/endpoint/main/secret')).body.key).toBe(second);
  });

  it.skipIf(!HAS_SCRIPT)(
    'at a terminal, says that @- waits for lines ended by Ctrl-D, and takes a typed secret unseen',
    async () => {
      await createApp(api, { uid: 'typed' });
      await cli('endpoints', 'add', 'typed', `${receiver.url}/typed`, '--uid', 'main');
      const env = { COURIER_URL: api.url, COURIER_TOKEN: TOKEN };
      const headers = await runOnTerminal(['endpoints', 'headers', 'typed', 'main', '--header', '@-'], {
        env,
        typed: 'X-Typed: 1\n\u0004',
        after: 'Ctrl-D',
      });
      expect(headers.code).toBe(0);
      expect(headers.output).toContain(
        "courier: reading 'Name: value' lines from the terminal; end with Ctrl-D\r\n",
      );
      expect((await api.request('GET', '/api/v1/app/typed/endpoint/main/headers')).body.headers).toEqual({
        'X-Typed': '1',
      });

      const secret = `whsec_${Buffer.alloc(32, 9).toString('base64')}`;
      const rotated = await runOnTerminal(['endpoints', 'rotate-secret', 'typed', 'main', '--secret', '-'], {
        env,
        typed: `${secret}\r`,
        after: 'then Enter: ',
      });
      expect(rotated.code).toBe(0);
      expect(rotated.output).toMatch(
        /^courier: type the secret \(not shown\), then Enter: \r\nrotated main\r\n/,
      );
      expect((await api.request('GET', '/api/v1/app/typed/endpoint/main/secret')).body.key).toBe(secret);
      // stderr sent to a file: the prompt is on the terminal still (/dev/tty), not in the file.
      const log = join(dir, 'rotate-secret.log');
      const next = `whsec_${Buffer.alloc(32, 10).toString('base64')}`;
      expect(
        await runOnTerminal(['endpoints', 'rotate-secret', 'typed', 'main', '--secret', '-'], {
          env,
          typed: `${next}\r`,
          after: 'then Enter: ',
          stderrTo: log,
        }),
      ).toEqual({
        code: 0,
        output:
          'courier: type the secret (not shown), then Enter: \r\nrotated main\r\n' +
          'signing secret: the one given (not shown)\r\nthe previous secret signs beside it for 1d\r\n',
      });
      expect(await readFile(log, 'utf8')).toBe('');
      expect((await api.request('GET', '/api/v1/app/typed/endpoint/main/secret')).body.key).toBe(next);
      // Without a token, said before the secret is asked for.
      expect(
        await runOnTerminal(['endpoints', 'add', 'typed', `${receiver.url}/x`, '--secret', '-'], {
          env: { COURIER_URL: api.url },
          typed: '',
          after: 'then Enter: ',
        }),
      ).toEqual({ code: 2, output: expect.stringMatching(/^courier: no API token: /) });
    },
    // Four runs on a terminal, each with a deadline of 20 s.
    60_000,
  );

  it("an operational endpoint's headers and rotated secret are what its deliveries carry", async () => {
    const added = await cli('operational-endpoints', 'add', `${receiver.url}/oncall`, '--uid', 'oncall');
    const [, first] = added.stdout.match(/signing secret: (\S+)\n$/)!;
    expect(
      (
        await piped(
          'Authorization: Bearer ops\n',
          'operational-endpoints',
          'headers',
          'oncall',
          '--header',
          '@-',
        )
      ).code,
    ).toBe(0);
    const rotated = await cli('operational-endpoints', 'rotate-secret', 'oncall', '--grace-period', '1h');
    const [, second] = rotated.stdout.match(/signing secret: (whsec_\S+)\n/)!;

    // An endpoint made in an application: announced to the operational endpoint.
    await createApp(api, { uid: 'watched' });
    await cli('endpoints', 'add', 'watched', `${receiver.url}/watched`, '--uid', 'main');
    await deliverDue(api);
    const announced = receiver.requests.filter((r) => {
      const event = JSON.parse(r.body.toString());
      return r.url === '/oncall' && event.type === 'endpoint.created' && event.data.appUid === 'watched';
    });
    expect(announced).toHaveLength(1);
    const [request] = announced;
    expect(request!.headers.authorization).toBe('Bearer ops');
    // Both sign during the grace period; a secret never set does not verify.
    expect([
      signedBy(second!, request!),
      signedBy(first!, request!),
      signedBy('whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', request!),
    ]).toEqual([true, true, false]);
  });
});
