import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { freePort } from '../support/ports.ts';

const CLI = fileURLToPath(new URL('../../bin/courier.js', import.meta.url));

/** Runs `courier serve` until it prints its API line (then stops it) or exits; its output and exit code. */
function serve(dataDir: string, port: number): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve) => {
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      COURIER_DATA_DIR: dataDir,
      COURIER_PORT: String(port),
      COURIER_LOG_LEVEL: 'warn',
    };
    delete env.COURIER_DATABASE_URL;
    delete env.COURIER_ADMIN_TOKEN;
    const child = spawn(process.execPath, [CLI, 'serve'], { env });
    let output = '';
    const take = (chunk: Buffer) => {
      output += chunk;
      if (output.includes('API: ')) child.kill('SIGTERM');
    };
    child.stdout.on('data', take);
    child.stderr.on('data', take);
    child.on('exit', (code) => resolve({ code, output }));
  });
}

describe('courier serve', () => {
  let dataDir: string;
  let blocker: Server | undefined;
  beforeEach(() => {
    dataDir = mkdtempSync(join(tmpdir(), 'courier-serve-'));
  });
  afterEach(async () => {
    await new Promise((resolve) => (blocker ? blocker.close(resolve) : resolve(undefined)));
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('shows the admin token on the first start that succeeds, after one that failed on a taken port', async () => {
    const taken = await freePort();
    blocker = createServer();
    await new Promise<void>((resolve) => blocker!.listen(taken, '127.0.0.1', resolve));
    const failed = await serve(dataDir, taken);
    expect(failed.code).toBe(1);
    expect(failed.output).toContain('EADDRINUSE');
    expect(failed.output).not.toContain('Admin API token');

    const started = await serve(dataDir, await freePort());
    expect(started.output).toMatch(/Admin API token \(shown once; store it now\):\n\n {4}courier_\S+\n/);
  }, 60_000);
});
