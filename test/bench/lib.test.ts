import { mkdtempSync, readdirSync, readFileSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { COURIER_PROCESS, peakRssMiB, pinnedCliEntry, spawnChild, waitFor } from '../../bench/lib.ts';
import { touch } from '../support/files.ts';

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

describe("a run's Courier CLI", () => {
  it('stays the one chosen at its first use, though a source is edited meanwhile', () => {
    const root = mkdtempSync(join(dir, 'checkout-'));
    touch(join(root, 'src/cli/main.ts'), 1_000);
    utimesSync(join(root, 'src/cli'), 1_000, 1_000);
    utimesSync(join(root, 'src'), 1_000, 1_000);
    touch(join(root, 'dist/cli/main.js'), 2_000);
    touch(join(root, 'dist/.built'), 2_000);
    const entry = pinnedCliEntry(root);
    expect(entry()).toEqual({ compiled: true, path: join(root, 'dist/cli/main.js') });
    // bin/courier.js would now run the sources; the run's later processes keep the compiled CLI.
    touch(join(root, 'src/cli/main.ts'), 3_000);
    expect(entry()).toEqual({ compiled: true, path: join(root, 'dist/cli/main.js') });
    expect(pinnedCliEntry(root)().compiled).toBe(false);
  });

  it("counts the CPU of Courier's processes whichever entry they run", () => {
    for (const cmdline of [
      'node /w/courier/dist/cli/main.js worker',
      'node --import tsx /w/courier/src/cli/main.ts worker',
      'node /w/other-checkout/bin/courier.js worker',
    ])
      expect(cmdline).toMatch(COURIER_PROCESS);
    expect('node /w/courier/bench/workers/raw-sql.ts').not.toMatch(COURIER_PROCESS);
  });
});
