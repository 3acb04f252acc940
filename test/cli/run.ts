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
  /** What the operator types (a raw terminal's Enter is \r), once `after` shows on the terminal. */
  typed: string;
  after: string;
}

/**
 * Runs `courier` on a pseudo-terminal, as an operator at a terminal would: its stdout and stderr
 * are one output, with the terminal's own echo of what was typed, if it echoes.
 */
export function runOnTerminal(
  args: string[],
  options: TerminalRunOptions,
): Promise<{ code: number | null; output: string }> {
  const command = [process.execPath, BIN, ...args].map((arg) => `'${arg}'`).join(' ');
  const child = spawn('script', ['-qec', command, '/dev/null'], { env: environment(options.env) });
  let output = '';
  child.stdout.on('data', (chunk) => {
    const waiting = !output.includes(options.after);
    output += chunk;
    if (waiting && output.includes(options.after)) child.stdin.end(options.typed);
  });
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, output }));
  });
}
