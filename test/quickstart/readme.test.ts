/**
 * README.md's Quickstart, followed literally in a fresh clone of the repository's committed HEAD:
 * `npm ci`, a first `npm start` (which prints the URL and a token), the receiver command, the
 * restart with the loopback range allowed, then the README's `npx courier` and curl commands, run
 * by bash as a person would paste them. The commands are read from the clone's README, so the test breaks when
 * the README and the code drift apart. Only the ports change (free ones instead of 8080 and 9000,
 * through COURIER_PORT and the URLs), and the data directory is a temporary one.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { createConnection } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { OPTIONS } from '../../src/config-options.ts';
import { freePort } from '../support/ports.ts';

const run = promisify(execFile);
/** The repository to clone: this one (COURIER_QUICKSTART_REPO points elsewhere, to try the test itself). */
const REPO = process.env.COURIER_QUICKSTART_REPO ?? fileURLToPath(new URL('../..', import.meta.url));
const DEFAULT_PORT = Number(OPTIONS.find((o) => o.name === 'COURIER_PORT')!.default);

/** The commands of the Quickstart's ```sh blocks, continuation lines joined, comments kept. */
function quickstartCommands(readme: string): string[] {
  const start = readme.search(/^## Quickstart/m);
  if (start < 0) throw new Error('README.md has no "## Quickstart" section');
  const rest = readme.slice(start);
  const end = rest.slice(3).search(/^## /m);
  const section = end < 0 ? rest : rest.slice(0, end + 3);
  const commands: string[] = [];
  for (const [, block] of section.matchAll(/^```sh\n([\s\S]*?)^```$/gm)) {
    let pending = '';
    for (const line of block!.split('\n')) {
      if (!line.trim() && !pending) continue;
      if (line.endsWith('\\')) pending += line + '\n';
      else {
        commands.push(pending + line);
        pending = '';
      }
    }
    if (pending) commands.push(pending);
  }
  return commands;
}

interface Proc {
  name: string;
  child: ChildProcess;
  output: string;
}

function listening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection({ port, host: '127.0.0.1' });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

async function until<T>(
  what: string,
  probe: () => T | undefined | Promise<T | undefined>,
  ms: number,
): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await probe();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

function groupAlive(pid: number): boolean {
  try {
    process.kill(-pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe('README quickstart in a fresh clone', () => {
  const procs: Proc[] = [];
  let dir: string | undefined;

  /** Starts `script` under bash in its own process group (so the whole tree can be signalled). */
  function background(name: string, script: string, cwd: string, env: NodeJS.ProcessEnv): Proc {
    const child = spawn('bash', ['-c', script], {
      cwd,
      env,
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const proc: Proc = { name, child, output: '' };
    child.stdout!.on('data', (chunk: Buffer) => {
      proc.output += chunk.toString();
    });
    child.stderr!.on('data', (chunk: Buffer) => {
      proc.output += chunk.toString();
    });
    procs.push(proc);
    return proc;
  }

  /** Signals the process group, then kills it if it has not gone within `ms`. */
  async function stop(proc: Proc, signal: NodeJS.Signals, ms = 10_000): Promise<void> {
    const pid = proc.child.pid!;
    if (!groupAlive(pid)) return;
    process.kill(-pid, signal);
    const deadline = Date.now() + ms;
    while (groupAlive(pid) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
    if (groupAlive(pid)) process.kill(-pid, 'SIGKILL');
    await until(`${proc.name} to exit`, () => !groupAlive(pid), 5_000);
  }

  const transcript = () => procs.map((p) => `--- ${p.name}:\n${p.output}`).join('\n');

  afterAll(async () => {
    for (const proc of procs) await stop(proc, 'SIGTERM', 5_000).catch(() => undefined);
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('delivers a webhook by following the Quickstart literally', { timeout: 300_000 }, async () => {
    dir = await mkdtemp(join(tmpdir(), 'courier-quickstart-'));
    const clone = join(dir, 'courier');
    await run('git', ['clone', '--quiet', REPO, clone], { timeout: 60_000 });

    const env: NodeJS.ProcessEnv = {};
    for (const [key, value] of Object.entries(process.env))
      if (!/^(COURIER_|VITEST)|^(NODE_ENV|NODE_OPTIONS|TEST)$/.test(key)) env[key] = value;
    await run('npm', ['ci', '--prefer-offline', '--no-audit', '--no-fund'], {
      cwd: clone,
      env,
      timeout: 150_000,
      maxBuffer: 16 << 20,
    });

    const readme = await readFile(join(clone, 'README.md'), 'utf8');
    const commands = quickstartCommands(readme);
    expect(commands.length, 'Quickstart commands').toBeGreaterThan(4);

    // The README's ports, replaced by free ones: the API's through COURIER_PORT, the receiver's in
    // its command and in the endpoint URL.
    const apiLine = commands.find((c) => /^export API=/.test(c));
    const receiverLine = commands.find((c) => /^node -e .*\.listen\(\d+\)/.test(c));
    expect(apiLine, 'an `export API=` line in the Quickstart').toBeDefined();
    expect(receiverLine, 'a receiver `node -e …listen(PORT)` command in the Quickstart').toBeDefined();
    const readmeApiPort = Number(/^export API=http:\/\/127\.0\.0\.1:(\d+)\/api\/v1$/.exec(apiLine!)?.[1]);
    expect(readmeApiPort, 'the README API URL uses the default COURIER_PORT').toBe(DEFAULT_PORT);
    const readmeReceiverPort = Number(/\.listen\((\d+)\)/.exec(receiverLine!)![1]);
    expect(readme, 'the README says how to use another port').toMatch(/COURIER_PORT/);
    const apiPort = await freePort();
    const receiverPort = await freePort();
    const localize = (command: string) =>
      command
        .replaceAll(`127.0.0.1:${readmeApiPort}`, `127.0.0.1:${apiPort}`)
        .replaceAll(`127.0.0.1:${readmeReceiverPort}`, `127.0.0.1:${receiverPort}`)
        .replaceAll(`.listen(${readmeReceiverPort})`, `.listen(${receiverPort})`);
    const serverEnv = { ...env, COURIER_PORT: String(apiPort), COURIER_DATA_DIR: join(dir, 'data') };
    const apiUrl = `http://127.0.0.1:${apiPort}/api/v1`;

    // "npm start prints the API URL and, on first start, an admin token".
    const first = background('npm start (first start)', 'npm start', clone, serverEnv);
    const generated = await until(
      'the first `npm start` to print its URL and token',
      () => {
        if (first.child.exitCode !== null) throw new Error(`npm start exited:\n${first.output}`);
        // The token is shown as soon as it is made, the URL once the workers run too.
        if (!first.output.includes('API: ')) return undefined;
        return /\n\s+(courier_[A-Za-z0-9_-]{43})\n/.exec(first.output)?.[1];
      },
      60_000,
    );
    expect(first.output).toContain(`Courier is running at http://127.0.0.1:${apiPort}`);
    expect(first.output).toContain(`API: ${apiUrl}`);
    await stop(first, 'SIGINT');
    expect(await listening(apiPort), 'the first server is gone after Ctrl-C').toBe(false);

    let prelude = 'set -e\n';
    let server: Proc | undefined;
    let receiver: Proc | undefined;
    const answers: { command: string; output: string }[] = [];
    const cliAnswers: { command: string; output: string }[] = [];
    let messageId: string | undefined;
    let cliMessageId: string | undefined;
    // The README's third terminal: the commands read COURIER_PORT, as it says.
    const cliEnv = { ...env, COURIER_PORT: String(apiPort) };
    /** Runs `command` until `done` holds of its output, for 5 s at most (a delivery is not instant). */
    const settled = async (
      command: string,
      commandEnv: NodeJS.ProcessEnv,
      done: (output: string) => boolean,
    ) => {
      const deadline = Date.now() + 5_000;
      for (;;) {
        const { stdout } = await run('bash', ['-c', prelude + command], {
          cwd: clone,
          env: commandEnv,
          timeout: 15_000,
        });
        if (done(stdout) || Date.now() > deadline) return stdout;
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
    };
    const deliveredIn = (out: string, id: string | undefined) => {
      try {
        const { data } = JSON.parse(out) as { data: { msgId: string; responseStatusCode: number }[] };
        return data.some((a) => a.msgId === id && a.responseStatusCode === 200);
      } catch {
        return false;
      }
    };
    const printedBy = async (id: string | undefined) =>
      until('the receiver to print the event', () => id && receiver?.output.includes(id), 5_000).catch(
        (error) => {
          throw new Error(`${error.message}\n${transcript()}`);
        },
      );

    for (const original of commands) {
      const command = localize(original);
      if (/^export \w+=/.test(command)) {
        // The placeholder of the token the first start printed.
        prelude += command.replace(/courier_\.\.\./, generated) + '\n';
      } else if (receiverLine === original) {
        receiver = background('receiver', prelude + command, clone, env);
        await until('the receiver to listen', () => listening(receiverPort), 15_000);
      } else if (/\bnpm start\b/.test(command)) {
        server = background('npm start', prelude + command, clone, serverEnv);
        await until(
          '`npm start` to print its URL',
          () => {
            if (server!.child.exitCode !== null) throw new Error(`npm start exited:\n${server!.output}`);
            return server!.output.includes(`API: ${apiUrl}`);
          },
          60_000,
        );
        expect(server.output).toContain(`Courier is running at http://127.0.0.1:${apiPort}`);
        expect(server.output, 'no token is generated when COURIER_ADMIN_TOKEN is set').not.toMatch(
          /courier_[A-Za-z0-9_-]{43}/,
        );
      } else if (/^npx courier /.test(command)) {
        expect(server, 'the server is started before the first command').toBeDefined();
        // attempts shows the response's status, status the message's standing.
        const shown = { attempts: / 200 +success /, status: / delivered / }[
          /^npx courier (\w+)/.exec(command)![1]!
        ];
        if (shown) {
          expect(cliMessageId, `send printed an id: ${cliAnswers.at(-1)?.output}`).toMatch(/^msg_/);
          await printedBy(cliMessageId);
        }
        const output = await settled(command, cliEnv, (out) => !shown || shown.test(out));
        cliAnswers.push({ command, output });
        if (/^npx courier send /.test(command)) cliMessageId = /\n(msg_\w+) /.exec(output)?.[1];
      } else if (/^curl /.test(command)) {
        expect(server, 'the server is started before the first curl').toBeDefined();
        const isAttempts = /\/attempt\//.test(command);
        // "The receiver prints the event within milliseconds."
        if (isAttempts) await printedBy(messageId);
        // An attempt is recorded just after the receiver answers: look again briefly if it is not yet.
        const output = await settled(command, env, (out) => !isAttempts || deliveredIn(out, messageId));
        answers.push({ command, output });
        let body: { id?: string };
        try {
          body = JSON.parse(output);
        } catch {
          throw new Error(`not a JSON answer from: ${command}\n→ ${output}\n${transcript()}`);
        }
        expect(body, `${command}\n→ ${output}`).not.toHaveProperty('code');
        if (/\/msg\s/.test(command.split('\n')[0]!)) messageId = body.id;
      } else {
        throw new Error(`the test does not know how to follow this Quickstart command: ${original}`);
      }
    }

    // The commands: an application, an endpoint with its secret, a message, its attempt and where it stands.
    const cliOutput = (name: string) =>
      cliAnswers.find((a) => a.command.startsWith(`npx courier ${name} `))?.output;
    expect(cliOutput('apps'), transcript()).toMatch(/^created app_\w+ \(acme\)\n$/);
    expect(cliOutput('endpoints')).toMatch(/^created ep_\w+ \(main\)\nsigning secret: whsec_\S+\n$/);
    expect(cliMessageId, `the send command printed an id: ${cliOutput('send')}`).toMatch(/^msg_/);
    expect(cliOutput('attempts')).toMatch(new RegExp(`\n\\S+ \\S+ +${cliMessageId} +1 +200 +success `));
    expect(cliOutput('status')).toMatch(/\n\S+ +main +\S+ +delivered +1 +-\n$/);

    expect(answers.length, 'curl: a message, its attempts and destinations').toBeGreaterThanOrEqual(3);
    const attemptsAnswer = answers.find((a) => /\/attempt\//.test(a.command));
    const destinationsAnswer = answers.find((a) => /\/msg\/[^/\s]+\/endpoint\s/.test(a.command));
    expect(attemptsAnswer, 'a curl lists the attempts').toBeDefined();
    expect(destinationsAnswer, "a curl lists the message's destinations").toBeDefined();
    expect(messageId, 'the message curl answered an id').toMatch(/^msg_/);

    // The receiver printed `<webhook-id> <body>` for each: the message's id and the payload sent.
    const sentByCli = /^npx courier send \S+ \S+ '(\{.*\})'/.exec(
      commands.find((c) => /^npx courier send /.test(c))!,
    )?.[1];
    const sentByCurl = /-d '(\{.*"payload".*\})'/.exec(commands.find((c) => /\/msg\b/.test(c))!)?.[1];
    for (const [id, payload] of [
      [cliMessageId, JSON.parse(sentByCli!)],
      [messageId, JSON.parse(sentByCurl!).payload],
    ]) {
      const printed = receiver!.output.split('\n').find((line) => line.startsWith(`${id} `));
      expect(printed, transcript()).toBeDefined();
      expect(JSON.parse(printed!.slice(id!.length + 1))).toEqual(payload);
    }

    // The attempts curl shows both messages' attempts, each a success with a 200.
    const attempts = JSON.parse(attemptsAnswer!.output);
    expect(attempts.data, attemptsAnswer!.output).toEqual(
      [messageId, cliMessageId].map((msgId) =>
        expect.objectContaining({ msgId, responseStatusCode: 200, status: 0, statusText: 'success' }),
      ),
    );
    // The destinations curl (run after it) shows the message delivered to the one endpoint.
    const destinations = JSON.parse(destinationsAnswer!.output);
    expect(destinations.data, destinationsAnswer!.output).toEqual([
      expect.objectContaining({
        uid: 'main',
        status: 0,
        statusText: 'success',
        nextAttempt: null,
        attempts: 1,
      }),
    ]);

    // Ctrl-C stops everything and frees the ports.
    for (const proc of [server!, receiver!]) await stop(proc, 'SIGINT');
    expect(await listening(apiPort)).toBe(false);
    expect(await listening(receiverPort)).toBe(false);
  });
});
