/**
 * `courier verify` and `courier sign`, the real binary: a webhook Courier delivered to a loopback
 * receiver, verified from its captured headers and body; signatures made by `sign` checked by the
 * standardwebhooks library; what goes wrong said, with the exit status scripts read.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.ts';
import { type Receiver, startReceiver } from '../delivery/receiver.ts';
import { createApp, createEndpoint, startApi, type TestApi } from '../e2e/support.ts';
import { publishAndDeliver } from './deliver.ts';
import { HAS_SCRIPT, type RunOptions, runCli, runOnTerminal } from './run.ts';

const SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
const OTHER = `whsec_${Buffer.alloc(32, 7).toString('base64')}`;
const BODY = '{"test": 2432232314}';

describe('courier verify and courier sign', () => {
  let dir: string;
  const file = async (name: string, content: string | Buffer) => {
    const path = join(dir, name);
    await writeFile(path, content);
    return `@${path}`;
  };
  const signed = async (...args: string[]) => {
    const run = await runCli(['sign', BODY, '--json', ...args]);
    expect(run).toMatchObject({ code: 0, stderr: '' });
    return JSON.parse(run.stdout) as Record<string, string>;
  };
  const asArgs = (headers: Record<string, string>) =>
    Object.entries(headers).flatMap(([name, value]) => ['-H', `${name}: ${value}`]);

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'courier-signature-'));
  });
  afterAll(() => rm(dir, { recursive: true, force: true }));

  describe('a webhook Courier delivered', () => {
    let api: TestApi;
    let receiver: Receiver;

    beforeAll(async () => {
      api = await startApi({ clock: new ManualClock(Date.now()) });
      receiver = await startReceiver((_req, res) => res.writeHead(200).end());
    });
    afterAll(async () => {
      await receiver.close();
      await api.close();
    });

    it("verifies from the receiver's logged headers (JSON) or a captured request head, the secret on standard input", async () => {
      const app = await createApp(api, { uid: 'verified' });
      await createEndpoint(api, app, { url: `${receiver.url}/hook`, secret: SECRET });
      await publishAndDeliver(api, app, { eventType: 'order.created', payload: { order: 42, note: 'ü' } });
      const [request] = receiver.requests;
      const body = await file('body.json', request!.body);
      // As an HTTP/2 server's req.headers would have them too.
      const logged = await file('headers.json', JSON.stringify({ ':method': 'POST', ...request!.headers }));
      const head = Object.entries(request!.headers).map(([name, value]) => `${name}: ${value}\r\n`);
      const captured = await file(
        'request.txt',
        `POST /hook HTTP/1.1\r\n${head.join('')}\r\n${request!.body}`,
      );

      for (const headers of [logged, captured]) {
        const run = await runCli(['verify', body, '--header', headers, '--secret', '-'], {
          stdin: `${SECRET}\n`,
        });
        expect(run.stderr).toBe('');
        expect(run.code).toBe(0);
        expect(run.stdout).toMatch(/^webhook-id +msg_\w+$/m);
        expect(run.stdout).toMatch(/^match +signature 1 of 1 with secret 1 of 1$/m);
        expect(run.stdout).toMatch(
          /^verified: (sent \d+(\.\d)? s ago|sent this second|dated \d+(\.\d)? s ahead of this clock), within the tolerance of 5m$/m,
        );
      }

      // The body as an editor saves it, a final newline added.
      const edited = await file('edited.json', Buffer.concat([request!.body, Buffer.from('\n')]));
      const run = await runCli(['verify', edited, '--header', logged], {
        env: { COURIER_WEBHOOK_SECRET: SECRET },
      });
      expect(run.code).toBe(1);
      expect(run.stderr).toBe(
        'courier: not verified: no signature matches: the secret, the body bytes, webhook-id or webhook-timestamp differ from what was signed; the body matches with its final newline removed: its bytes changed after it was signed\n',
      );
      expect(run.stdout).toMatch(/^match +none$/m);
    });
  });

  it('sign makes headers the standardwebhooks library verifies, a signature per secret', async () => {
    const headers = await signed('--secret', SECRET, '--secret', OTHER, '--id', 'msg_given');
    expect(headers['webhook-id']).toBe('msg_given');
    expect(Math.abs(Number(headers['webhook-timestamp']) - Date.now() / 1000)).toBeLessThan(60);
    expect(headers['webhook-signature']!.split(' ')).toHaveLength(2);
    for (const secret of [SECRET, OTHER])
      expect(new Webhook(secret).verify(BODY, headers)).toEqual({ test: 2432232314 });

    const lines = await runCli(
      ['sign', BODY, '--timestamp', '1614265330', '--id', 'msg_p5jXN8AQM9LWM0D4loKWxJek'],
      {
        env: { COURIER_WEBHOOK_SECRET: SECRET },
      },
    );
    // The Standard Webhooks test vector, as curl -H @- reads it.
    expect(lines).toEqual({
      code: 0,
      stdout:
        'webhook-id: msg_p5jXN8AQM9LWM0D4loKWxJek\nwebhook-timestamp: 1614265330\nwebhook-signature: v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=\n',
      stderr: '',
    });
  });

  it('verify says why a webhook fails: its age (passing with --at or a wider --tolerance), a missing header, a secret', async () => {
    const headers = await signed('--secret', SECRET, '--timestamp', '1614265330');
    const old = await runCli(['verify', BODY, '--secret', SECRET, ...asArgs(headers)]);
    expect(old.code).toBe(1);
    expect(old.stderr).toBe(
      'courier: not verified: the signature matches, but the timestamp is older than the tolerance of 5m: a receiver refuses it as a possible replay (to check a captured webhook, give --at the time it was received)\n',
    );
    expect(old.stdout).toMatch(
      /^webhook-timestamp +1614265330 \(2021-02-25 15:02:10Z, sent \d+d( \d+h)? ago\)$/m,
    );

    const args = ['verify', BODY, '--secret', OTHER, '--secret', SECRET, ...asArgs(headers)];
    const then = await runCli([...args, '--at', '2021-02-25T15:07:10Z']);
    expect(then).toMatchObject({ code: 0, stderr: '' });
    expect(then.stdout).toContain(
      'match              signature 1 of 1 with secret 2 of 2\nverified: sent 5m ago, within the tolerance of 5m\n',
    );
    expect(await runCli([...args, '--at', '1614265631'])).toMatchObject({
      code: 1,
      stderr:
        'courier: not verified: the signature matches, but the timestamp is older than the tolerance of 5m: a receiver refuses it as a possible replay (--tolerance widens it)\n',
    });
    expect((await runCli([...args, '--at', '1614265631', '--tolerance', '1h'])).code).toBe(0);

    const json = await runCli([...args, '--at', '1614265330', '--json']);
    expect(json.code).toBe(0);
    expect(JSON.parse(json.stdout)).toEqual({
      verified: true,
      problem: null,
      reason: null,
      msgId: headers['webhook-id'],
      timestamp: '1614265330',
      ageSec: 0,
      toleranceSec: 300,
      v1Signatures: 1,
      otherSignatures: 0,
      secrets: 2,
      match: { secret: 2, signature: 1 },
    });

    const partial = await runCli([
      'verify',
      BODY,
      '--secret',
      SECRET,
      '-H',
      `webhook-id: ${headers['webhook-id']}`,
    ]);
    expect(partial).toMatchObject({
      code: 1,
      stderr: `courier: not verified: missing webhook-timestamp, webhook-signature (the headers given: webhook-id)\n`,
    });
    const wrong = await runCli(['verify', BODY, '--secret', OTHER, ...asArgs(headers), '--at', '1614265330']);
    expect(wrong.code).toBe(1);
    expect(wrong.stderr).toMatch(/^courier: not verified: no signature matches: the secret, /);
  });

  it('verify hints at a final newline, a byte order mark or CRLF line ends added to the body after signing, alone or together', async () => {
    const body = '{\n  "order": 42\n}';
    const headers = await runCli(['sign', body, '--secret', SECRET]);
    const given = await file('signed.txt', headers.stdout);
    const cases = [
      [Buffer.from(`\ufeff${body}`), 'its byte order mark removed'],
      [Buffer.from(body.replace(/\n/g, '\r\n')), 'CRLF line ends made LF'],
      [
        Buffer.from(`\ufeff${body.replace(/\n/g, '\r\n')}\r\n`),
        'its final newline removed and its byte order mark removed and CRLF line ends made LF',
      ],
    ] as const;
    for (const [bytes, hint] of cases) {
      const run = await runCli([
        'verify',
        await file('changed.json', bytes),
        '--secret',
        SECRET,
        '-H',
        given,
      ]);
      expect(run.code).toBe(1);
      expect(run.stderr).toMatch(
        new RegExp(`; the body matches with ${hint}: its bytes changed after it was signed\n$`),
      );
    }
    expect(await runCli(['verify', body, '--secret', SECRET, '-H', given])).toMatchObject({
      code: 0,
      stderr: '',
    });
    // Signed with a final newline that an inline argument or $(cat …) lost.
    const withNewline = await runCli(['sign', `${body}\n`, '--secret', SECRET]);
    const lost = await runCli([
      'verify',
      body,
      '--secret',
      SECRET,
      '-H',
      await file('nl.txt', withNewline.stdout),
    ]);
    expect(lost.stderr).toMatch(
      /; the body matches with a final newline added: its bytes changed after it was signed\n$/,
    );
  });

  it('verify reads curl -v output, repeated headers joined, svix-* names, and says a timestamp in milliseconds', async () => {
    const headers = await signed('--secret', SECRET, '--secret', OTHER);
    const [first, second] = headers['webhook-signature']!.split(' ');
    const verbose = [
      '*   Trying 127.0.0.1:3000...',
      '> POST /webhooks HTTP/1.1',
      '> Host: localhost:3000',
      `> webhook-id: ${headers['webhook-id']}`,
      `> webhook-timestamp: ${headers['webhook-timestamp']}`,
      `> webhook-signature: ${first}`,
      `> Webhook-Signature: ${second}`,
      '> ',
      '< HTTP/1.1 401 Unauthorized',
      '< webhook-id: msg_not_this_one',
      '<',
    ].join('\r\n');
    const run = await runCli(['verify', BODY, '--secret', OTHER, '-H', await file('curl-v.txt', verbose)]);
    expect(run).toMatchObject({ code: 0, stderr: '' });
    expect(run.stdout).toMatch(/^webhook-signature +2 v1 signatures$/m);
    expect(run.stdout).toMatch(/^match +signature 2 of 2 with secret 1 of 1$/m);

    const svix = [
      '-H',
      `svix-id: ${headers['webhook-id']}`,
      '-H',
      `svix-timestamp: ${headers['webhook-timestamp']}`,
    ];
    const svixRun = await runCli([
      'verify',
      BODY,
      '--secret',
      SECRET,
      ...svix,
      '-H',
      `svix-signature: ${first}`,
      // Empty, so read as absent: svix-id is the one used.
      '-H',
      'webhook-id:',
    ]);
    expect(svixRun).toMatchObject({ code: 0, stderr: '' });
    expect(svixRun.stdout).toMatch(/^svix-id +msg_\w+$/m);
    expect(svixRun.stdout).toMatch(/^svix-timestamp +\d+ \(/m);
    const unsigned = await runCli(['verify', BODY, '--secret', SECRET, ...svix]);
    expect(unsigned.stderr).toBe(
      'courier: not verified: missing svix-signature (the headers given: svix-id, svix-timestamp)\n',
    );

    const ms = `${headers['webhook-timestamp']}000`;
    const inMs = await runCli([
      'verify',
      BODY,
      '--secret',
      SECRET,
      ...asArgs({ ...headers, 'webhook-timestamp': ms }),
    ]);
    expect(inMs.code).toBe(1);
    expect(inMs.stderr).toMatch(/\(webhook-timestamp looks like milliseconds: it must be seconds\)\n$/);
    const huge = await runCli([
      'verify',
      BODY,
      '--secret',
      SECRET,
      ...asArgs({ ...headers, 'webhook-timestamp': '99999999999999' }),
    ]);
    expect(huge.code).toBe(1);
    expect(huge.stdout).toMatch(
      /^webhook-timestamp +99999999999999 \(dated \d+d( \d+h)? ahead of this clock\)$/m,
    );
  });

  it('verify reads a list of headers across blank lines, a captured head up to its body, and says what it could not check', async () => {
    const headers = await signed('--secret', SECRET);
    const list = Object.entries(headers).map(([name, value]) => `${name}: ${value}`);
    const spaced = await file('spaced.txt', `${list[0]}\n\n${list[1]}\n\n${list[2]}\n`);
    expect(await runCli(['verify', BODY, '--secret', SECRET, '-H', spaced])).toMatchObject({
      code: 0,
      stderr: '',
    });
    // A body line that looks like curl -v's does not make the capture one.
    const capture = await file('capture.txt', `POST /hook HTTP/1.1\n${list.join('\n')}\n\n> quoted\nx: y\n`);
    expect(await runCli(['verify', BODY, '--secret', SECRET, '-H', capture])).toMatchObject({
      code: 0,
      stderr: '',
    });

    const soon = await runCli([
      'verify',
      BODY,
      '--secret',
      SECRET,
      '-H',
      `webhook-id: msg_1`,
      '-H',
      'webhook-timestamp: soon',
    ]);
    expect(soon.code).toBe(1);
    expect(soon.stdout).toMatch(/^webhook-signature +none\nsecrets given +1\nmatch +not checked\n$/m);
    const ahead = await runCli([
      'verify',
      BODY,
      '--secret',
      SECRET,
      ...asArgs(headers),
      '--at',
      '1614265330',
    ]);
    expect(ahead.stdout).toMatch(/, dated \d+d( \d+h)? ahead of --at\)$/m);
    expect(ahead.stderr).toMatch(
      /^courier: not verified: the signature matches, but the timestamp is further in the future than the tolerance of 5m: a receiver refuses it \(--tolerance widens it\)\n$/,
    );

    // A value with a line break would print as two lines, a credential in the second.
    const folded = await runCli([
      'verify',
      BODY,
      '--secret',
      SECRET,
      '-H',
      'webhook-id: msg_1\nauthorization: Bearer TOPSECRET',
    ]);
    expect(folded).toEqual({
      code: 2,
      stdout: '',
      stderr: 'courier: --header: header webhook-id: a value holds a line break\n',
    });
    const unnamed = await runCli(['verify', BODY, '--secret', SECRET, '-H', 'Bearer TOPSECRET']);
    expect(unnamed).toEqual({ code: 2, stdout: '', stderr: "courier: --header: expected 'Name: value'\n" });
  });

  it.skipIf(!HAS_SCRIPT)(
    'at a terminal, --secret - takes the secrets typed, unseen, with line editing; Ctrl-C ends it (130), Ctrl-Z suspends it',
    async () => {
      const headers = await signed('--secret', OTHER);
      const args = ['verify', BODY, '--secret', '-', ...asArgs(headers)];
      const after = 'then Enter: ';
      // A character typed and erased, then the rotation's two secrets.
      const typed = await runOnTerminal(args, { typed: `x\u007f${SECRET} ${OTHER}\r`, after });
      expect(typed.code).toBe(0);
      expect(typed.output).toMatch(
        /^courier: type the secret, or two separated by a space \(not shown\), then Enter: \r\n/,
      );
      expect(typed.output).toMatch(/\r\nverified: /);
      for (const secret of [SECRET, OTHER]) expect(typed.output).not.toContain(secret.slice(6));

      // Ctrl-Z where no stop can happen (an orphaned process group), the terminal still not
      // echoing; a paste of two lines read whole (the second line's secret signed the webhook).
      const suspended = await runOnTerminal(args, { typed: ['\u001a', `${SECRET}\r${OTHER}\r`], after });
      expect(suspended.code).toBe(0);
      for (const secret of [SECRET, OTHER]) expect(suspended.output).not.toContain(secret.slice(6));
      expect(suspended.output).toMatch(/\r\nverified: /);
      // A job of a shell with job control: Ctrl-Z stops it, `fg` brings it back to its prompt, the
      // terminal not echoing, what was typed before the stop dropped (the secret typed again).
      const stopped = await runOnTerminal(args, {
        typed: [`${SECRET.slice(0, 20)}\u001a`, `${SECRET} ${OTHER}\r`],
        after,
        jobControl: true,
      });
      expect(stopped.code).toBe(0);
      expect(stopped.output.split(after)).toHaveLength(3);
      // The terminal echoes again while the command is stopped, for the shell's sake.
      expect(stopped.output).toContain('\r\necho\r\n');
      expect(stopped.output).toMatch(/\r\nverified: /);
      for (const secret of [SECRET, OTHER]) expect(stopped.output).not.toContain(secret.slice(6));

      const interrupted = await runOnTerminal(args, { typed: 'whsec_\u0003', after });
      expect(interrupted).toEqual({
        code: 130,
        output: expect.stringMatching(/then Enter: \r\ncourier: interrupted\r\n$/),
      });
      expect(await runOnTerminal(args, { typed: '\u0004', after })).toEqual({
        code: 2,
        output: expect.stringMatching(
          /then Enter: \r\ncourier: --secret -: no secret on standard input\r\n$/,
        ),
      });
    },
    // Five runs on a terminal, each with a deadline of 20 s, on two cores shared with other files.
    120_000,
  );

  it('refuses bad input with exit 2, never quoting a secret', async () => {
    const bad = 'whsec_bm90LWEtc2VjcmV0';
    const cases: [string[], string | RegExp, RunOptions?][] = [
      [
        ['verify', BODY, '--secret', SECRET, '--secret', bad, '-H', 'webhook-id: msg_1'],
        /^courier: --secret, secret 2 of 2: secret must be 24–75 bytes once decoded, got 12\n$/,
      ],
      [
        ['verify', BODY, '-H', 'webhook-id: msg_1'],
        /give the endpoint's secret: --secret whsec_…, --secret - \(standard input\) or COURIER_WEBHOOK_SECRET/,
      ],
      [
        ['sign', BODY],
        /^courier: COURIER_WEBHOOK_SECRET: secret is not valid base64/,
        { env: { COURIER_WEBHOOK_SECRET: 'nope!' } },
      ],
      [['verify', BODY, '--secret', SECRET, '-H', 'webhook-id'], /expected 'Name: value'/],
      [['verify', BODY, '--secret', SECRET, '--at', 'yesterday'], /expected a Unix time in seconds/],
      [['verify', BODY, '--secret', SECRET, '--at', '1767225600000'], /this looks like milliseconds/],
      [['verify', BODY, '--secret', SECRET], /required option '-H, --header <header>' not specified/],
      [['sign', BODY, '--secret', SECRET, '--timestamp', '1.5'], /expected a Unix time in whole seconds/],
      [
        ['sign', BODY, '--secret', SECRET, '--id', 'msg 1'],
        /expected 1-256 printable ASCII characters without spaces/,
      ],
      [
        ['verify', '-', '--secret', '-', '-H', 'webhook-id: msg_1'],
        /standard input is already taken by --secret -\./,
        { stdin: SECRET },
      ],
      [
        // The variable's secrets are never read from standard input: a - there is no secret.
        ['sign', BODY],
        /^courier: COURIER_WEBHOOK_SECRET, secret 2 of 2: secret is not valid base64/,
        { env: { COURIER_WEBHOOK_SECRET: `${SECRET} -` }, stdin: OTHER },
      ],
      [
        // The secrets read take the place of - among those given: a bad one named by its place.
        ['sign', BODY, '--secret', SECRET, '--secret', '-', '--secret', OTHER],
        /^courier: --secret, secret 2 of 4: secret must be 24–75 bytes once decoded, got 12\n$/,
        { stdin: `${bad} ${SECRET}\n` },
      ],
      [
        ['sign', BODY, '--secret', '-'],
        /^courier: --secret -: no secret on standard input\n$/,
        { stdin: ' \n' },
      ],
    ];
    for (const [args, message, options] of cases) {
      const run = await runCli(args, options);
      expect(run.code, args.join(' ')).toBe(2);
      expect(run.stderr).toMatch(message);
      expect(run.stderr).not.toContain('bm90LWEtc2VjcmV0');
      expect(run.stderr).not.toContain(SECRET.slice(6));
      expect(run.stdout).toBe('');
    }
    // Short enough for JSON.parse's message to quote it whole.
    const broken = await file('broken.json', '{"a": TOPSECRET}');
    expect(await runCli(['verify', BODY, '--secret', SECRET, '-H', broken])).toMatchObject({
      code: 2,
      stderr: expect.not.stringContaining('TOPSECRET'),
    });
    const json = await file('not-headers.json', '{"webhook-id": 42}');
    const refused = await runCli(['verify', BODY, '--secret', SECRET, '--header', json]);
    expect(refused).toMatchObject({ code: 2 });
    expect(refused.stderr).toMatch(
      /header webhook-id in .*not-headers\.json: expected a string \(or strings\)\./,
    );
  });
});
