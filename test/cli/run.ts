/** Runs the real `courier` binary as a child process, as an operator's shell would. */
import { spawn } from 'node:child_process';
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

export function runCli(args: string[], options: RunOptions = {}): Promise<Run> {
  const base = Object.fromEntries(Object.entries(process.env).filter(([key]) => !key.startsWith('COURIER_')));
  const child = spawn(process.execPath, [BIN, ...args], {
    env: { ...base, ...options.env },
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
