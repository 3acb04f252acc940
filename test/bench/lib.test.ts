import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { peakRssMiB, spawnChild, waitFor } from '../../bench/lib.ts';

const dir = mkdtempSync(join(tmpdir(), 'courier-bench-lib-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Pids of live processes whose command line names `path`. */
function processesRunning(path: string): string[] {
  return readdirSync('/proc').filter((pid) => {
    try {
      return /^\d+$/.test(pid) && readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(path);
    } catch {
      return false; // exited meanwhile
    }
  });
}

describe.runIf(process.platform === 'linux')('bench child processes', () => {
  it('are the script itself: its memory is what is measured, and SIGKILL ends it', {
    timeout: 30_000,
  }, async () => {
    const script = join(dir, 'hold-memory.ts');
    // 120 MiB written, so resident; a wrapper process around the script would show far less.
    writeFileSync(
      script,
      `const held: Buffer = Buffer.alloc(120 * 2 ** 20, 1);
       console.log('ready');
       setInterval(() => held[0]++, 1_000);`,
    );
    const child = spawnChild([script]);
    await waitFor(() => child.output().includes('ready'), 20_000, 'the script');
    expect(peakRssMiB(child.proc.pid)).toBeGreaterThan(120);
    expect(processesRunning(script)).toHaveLength(1);

    await child.stop('SIGKILL');
    expect(processesRunning(script)).toEqual([]);
  });
});
