/** Child processes of the chaos run: Courier (serve and workers) and the receivers. */
import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const COURIER_BIN = fileURLToPath(new URL('../bin/courier.js', import.meta.url));
const OUTPUT_KEPT = 64 * 1024;

export interface Proc {
  name: string;
  child: ChildProcess;
  /** The last 64 KiB of stdout and stderr. */
  output(): string;
  exited: Promise<void>;
  alive(): boolean;
}

/** One OS process per child (no tsx wrapper process), so a SIGKILL hits the real thing. */
export function spawnNode(name: string, args: string[], env: Record<string, string>): Proc {
  const child = spawn(process.execPath, args, {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  const keep = (chunk: Buffer) => {
    out += chunk.toString();
    if (out.length > OUTPUT_KEPT * 2) out = out.slice(-OUTPUT_KEPT);
  };
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()));
  return {
    name,
    child,
    output: () => out.slice(-OUTPUT_KEPT),
    exited,
    alive: () => child.exitCode === null && child.signalCode === null,
  };
}

export async function waitForOutput(
  proc: Proc,
  pattern: RegExp,
  timeoutMs: number,
): Promise<RegExpExecArray> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const match = pattern.exec(proc.output());
    if (match) return match;
    if (!proc.alive()) throw new Error(`${proc.name} exited before it was ready:\n${proc.output()}`);
    if (Date.now() > deadline)
      throw new Error(`${proc.name} not ready after ${timeoutMs} ms:\n${proc.output()}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

export async function stopProc(proc: Proc, signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
  if (proc.alive()) proc.child.kill(signal);
  await proc.exited;
}

export function spawnCourier(name: string, command: 'serve' | 'worker', env: Record<string, string>): Proc {
  return spawnNode(name, [COURIER_BIN, command], env);
}

/** Resolves once the process logs that it is working. */
export function courierReady(proc: Proc, command: 'serve' | 'worker'): Promise<unknown> {
  return waitForOutput(proc, command === 'serve' ? /Courier is running at/ : /worker started/, 60_000);
}

export function spawnReceiver(name: string, config: unknown): Proc {
  return spawnNode(name, ['--import', 'tsx', fileURLToPath(new URL('./receiver.ts', import.meta.url))], {
    CHAOS_RECEIVER: JSON.stringify(config),
  });
}
