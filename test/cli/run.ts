/** Runs the real `courier` binary as a child process, as an operator's shell would. */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

export const BIN = fileURLToPath(new URL('../../bin/courier.js', import.meta.url));

export interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

export interface RunOptions {
  /** Added to a clean environment: no COURIER_* variable of the test runner leaks in. */
  env?: Record<string, string>;
  stdin?: string;
}

const environment = (added: Record<string, string> = {}): NodeJS.ProcessEnv => ({
  ...Object.fromEntries(Object.entries(process.env).filter(([key]) => !key.startsWith('COURIER_'))),
  ...added,
});

export function runCli(args: string[], options: RunOptions = {}): Promise<Run> {
  const child = spawn(process.execPath, [BIN, ...args], {
    env: environment(options.env),
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk) => (stdout += chunk));
  child.stderr.on('data', (chunk) => (stderr += chunk));
  child.stdin.end(options.stdin ?? '');
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** util-linux's `script`, which runs a command on a pseudo-terminal, is there. */
export const HAS_SCRIPT = existsSync('/usr/bin/script');

export interface TerminalRunOptions {
  env?: Record<string, string>;
  /**
   * What the operator types (a raw terminal's Enter is \r), once `after` shows on the terminal;
   * a list is typed a piece at a time, 200 ms apart.
   */
  typed: string | string[];
  after: string;
  /** A file stderr goes to instead of the terminal. */
  stderrTo?: string;
  /** Done once `after` first shows, before anything is typed: what happens while a person reads. */
  meanwhile?: () => Promise<unknown>;
  /**
   * Run as a job of a shell with job control (`bash -m`), its output through `cat` (a job of two
   * processes, as `courier … | jq` is, stops only whole), which, once it stops (Ctrl-Z), prints
   * `echo` or `-echo` (whether the terminal echoes) and brings it back with `bg`, then `fg`: each
   * piece of `typed` waits for `after` to show once more.
   */
  jobControl?: boolean;
}

const quoted = (arg: string) => `'${arg.replaceAll("'", "'\\''")}'`;

/**
 * Runs `courier` on a pseudo-terminal, as an operator at a terminal would: its stdout and stderr
 * are one output, with the terminal's own echo of what was typed, if it echoes. Killed, and
 * refused with its output, if it has not ended in 20 s.
 */
export function runOnTerminal(
  args: string[],
  options: TerminalRunOptions,
): Promise<{ code: number | null; output: string }> {
  const courier =
    [process.execPath, BIN, ...args].map(quoted).join(' ') +
    (options.stderrTo ? ` 2>${quoted(options.stderrTo)}` : '');
  // Without job control, `script`'s shell and the command are one orphaned process group, whose
  // stops the kernel discards; `bash -m` makes the command a job of its own. Once it stops, the
  // shell shows whether the terminal echoes: `echo` or `-echo`.
  const echoing = "stty -a | tr ' ;' '\\n\\n' | grep -x -- '-\\?echo'";
  // `bg` first: the job, taking the terminal back from the background, stops again (awaited, 5 s
  // at most) until the `fg`.
  const stoppedAgain = 'for i in $(seq 100); do [ -n "$(jobs -s)" ] && break; sleep 0.05; done';
  const job = `set -o pipefail; ${courier} | cat; ${echoing}; bg; ${stoppedAgain}; fg`;
  const command = options.jobControl ? `bash -mc ${quoted(job)}` : courier;
  const child = spawn('script', ['-qec', command, '/dev/null'], { env: environment(options.env) });
  const pieces = [options.typed].flat();
  const typeNext = () => {
    const piece = pieces.shift();
    if (piece === undefined || child.exitCode !== null) return;
    child.stdin.write(piece);
    if (pieces.length && !options.jobControl) setTimeout(typeNext, 200);
  };
  let output = '';
  let shown = 0;
  let failure: unknown;
  child.stdout.on('data', (chunk) => {
    output += chunk;
    const times = output.split(options.after).length - 1;
    if (times > shown && shown === 0 && options.meanwhile) {
      options.meanwhile().then(typeNext, (error: unknown) => {
        failure = error;
        child.kill('SIGKILL');
      });
    } else if (times > shown && (shown === 0 || options.jobControl)) typeNext();
    shown = times;
  });
  return new Promise((resolve, reject) => {
    const deadline = setTimeout(() => {
      child.kill('SIGKILL');
      reject(
        new Error(
          `courier ${args.join(' ')} still running after 20 s; its output: ${JSON.stringify(output)}`,
        ),
      );
    }, 20_000);
    child.once('error', reject);
    child.once('close', (code) => {
      clearTimeout(deadline);
      if (failure) reject(failure);
      else resolve({ code, output });
    });
  });
}
