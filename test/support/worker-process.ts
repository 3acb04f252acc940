import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { TEST_DATABASE_URL } from './databases.ts';

const BIN = fileURLToPath(new URL('../../bin/courier.js', import.meta.url));

export interface WorkerProcess {
  child: ChildProcess;
  output: () => string;
  exited: Promise<number | null>;
}

const started = new Set<WorkerProcess>();

/** Starts `courier worker` against a test schema and waits until it is claiming. */
export async function spawnWorker(schema: string, env: Record<string, string> = {}): Promise<WorkerProcess> {
  const child = spawn(process.execPath, [BIN, 'worker'], {
    env: {
      ...process.env,
      COURIER_DATABASE_URL: TEST_DATABASE_URL,
      COURIER_SCHEMA: schema,
      COURIER_ALLOW_PRIVATE_NETWORKS: '127.0.0.0/8',
      COURIER_LOG_LEVEL: 'info',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (chunk) => (out += chunk));
  child.stderr!.on('data', (chunk) => (out += chunk));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const worker = { child, output: () => out, exited };
  started.add(worker);
  void exited.then(() => started.delete(worker));
  const deadline = Date.now() + 30_000;
  while (!out.includes('worker started')) {
    if (child.exitCode !== null) throw new Error(`worker exited early (${child.exitCode}):\n${out}`);
    if (Date.now() > deadline) throw new Error(`worker did not start:\n${out}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return worker;
}

/** Kills every worker a test left running (one that failed before stopping its own). */
export async function killStrayWorkers(): Promise<void> {
  await Promise.all([...started].map((w) => stopWorker(w, 'SIGKILL')));
}

export async function stopWorker(
  worker: WorkerProcess,
  signal: NodeJS.Signals = 'SIGTERM',
): Promise<number | null> {
  if (worker.child.exitCode === null) worker.child.kill(signal);
  return worker.exited;
}
