import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { acquireLock } from '../../src/store/lock-file.ts';

const CHILD = new URL('../support/lock-child.ts', import.meta.url).pathname;
const TSX = import.meta.resolve('tsx');

/** A pid no process has: one that just exited. */
async function deadPid(): Promise<number> {
  const child = spawn(process.execPath, ['-e', '']);
  await new Promise((resolve) => child.on('exit', resolve));
  return child.pid!;
}

/**
 * Runs a child that takes the lock at `at`; resolves with its first line (got, or why refused).
 * One that got it holds it until `letGo` ends its stdin.
 */
function runChild(path: string, at: number): Promise<{ outcome: string; letGo: () => Promise<void> }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', TSX, CHILD, path, String(at)]);
    const exited = new Promise<void>((done) => child.on('exit', () => done()));
    let out = '';
    const answer = () => {
      if (!out.includes('\n')) return;
      child.stdout.off('data', onData);
      const letGo = () => {
        child.stdin.end();
        return exited;
      };
      resolve({ outcome: out.trim(), letGo });
    };
    const onData = (chunk: Buffer) => {
      out += chunk;
      answer();
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', (c) => (out += c));
    child.on('error', reject);
    child.stdin.on('error', () => {}); // a refused child has exited: nothing reads its stdin
    child.on('exit', () => {
      out += '\n';
      answer();
    });
  });
}

describe('the embedded store lock file', () => {
  let dir: string;
  let path: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'courier-lock-'));
    path = join(dir, 'courier.lock');
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  const ours = () => new RegExp(`^${process.pid} ${hostname()} [0-9a-f]{8}$`);

  it('holds our pid and host, refuses a second taker in this process, and is gone once released', () => {
    const release = acquireLock(path);
    expect(readFileSync(path, 'utf8')).toMatch(ours());
    expect(() => acquireLock(path)).toThrow('already open in this process');
    release();
    acquireLock(path)();
  });

  it('takes over a lock whose process is gone', async () => {
    writeFileSync(path, String(await deadPid()));
    const release = acquireLock(path);
    expect(readFileSync(path, 'utf8')).toMatch(ours());
    release();
  });

  it('clears a takeover guard left by a process that died holding it, and takes over the stale lock', async () => {
    writeFileSync(path, String(await deadPid()));
    writeFileSync(`${path}.takeover`, `${await deadPid()} ${hostname()} 0badf00d`);
    const release = acquireLock(path);
    expect(readFileSync(path, 'utf8')).toMatch(ours());
    expect(readdirSync(dir).sort()).toEqual(['courier.lock']);
    release();
  });

  it("takes over one left by this pid (a container's pid 1, restarted), on this host", async () => {
    writeFileSync(path, `${process.pid} ${hostname()} 0badf00d`);
    acquireLock(path)();
  });

  it('never judges stale a lock of another host (a container sharing the volume), whatever its pid', async () => {
    for (const pid of [process.pid, await deadPid()]) {
      writeFileSync(path, `${pid} other-container 0badf00d`);
      expect(() => acquireLock(path)).toThrow(`in use by process ${pid} on other-container`);
      expect(readFileSync(path, 'utf8')).toBe(`${pid} other-container 0badf00d`);
    }
  });

  it('reads a host name with spaces whole', async () => {
    writeFileSync(path, `${await deadPid()} ${hostname()} x 0badf00d`);
    expect(() => acquireLock(path)).toThrow(`on ${hostname()} x`);
    writeFileSync(path, `${await deadPid()} ${hostname()} 0badf00d`);
    acquireLock(path)();
  });

  it('leaves on release a lock another process took over meanwhile', () => {
    const release = acquireLock(path);
    writeFileSync(path, `${process.pid + 1} ${hostname()} 0badf00d`);
    release();
    expect(readFileSync(path, 'utf8')).toBe(`${process.pid + 1} ${hostname()} 0badf00d`);
  });

  it('is taken by exactly one of eight processes starting at the same instant, over a stale lock', async () => {
    for (let round = 0; round < 3; round++) {
      writeFileSync(path, String(await deadPid()));
      const at = Date.now() + 3_000; // after every child has started
      const children = await Promise.all(Array.from({ length: 8 }, () => runChild(path, at)));
      await Promise.all(children.map((c) => c.letGo()));
      const outcomes = children.map((c) => c.outcome);
      expect(
        outcomes.filter((o) => o === 'got'),
        outcomes.join('\n'),
      ).toHaveLength(1);
      expect(
        outcomes.filter((o) => o.startsWith('refused: the data directory is in use by process')),
      ).toHaveLength(7);
    }
  }, 60_000);
});
