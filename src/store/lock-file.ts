/**
 * The embedded store's exclusive lock: a file holding the owner's pid and host name, next to the
 * data. A lock whose owner is gone (a crash, kill -9) is taken over. Whether a process lives can
 * only be told on its own host: a lock from another host name (another container on a shared
 * volume, where both may be pid 1) is never judged stale.
 *
 * The file appears with its pid already in it (written to a file of our own, then hard-linked into
 * place): created empty and written afterwards, a lock could be judged stale while its owner was
 * still writing it. A stale one is removed only by the holder of a second, short-lived lock (the
 * guard, `<path>.takeover`), after reading it again: while the guard is held nothing else can
 * replace a stale lock, since a taker's link fails while it is there and its dead owner cannot
 * release it. Without the guard, two processes that both judged it stale could remove it one after
 * the other, the second removing the lock a third had just taken, and two processes got it at once
 * (seen with eight started together).
 */
import { randomBytes } from 'node:crypto';
import { linkSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';

const lockedHere = new Set<string>();
const TRIES = 50;
/** A guard older than this was left by a process that died holding it (it is held for a few system calls). */
const ABANDONED_GUARD_MS = 10_000;

/** Takes the lock at `path` or throws why not; returns the function that releases it. */
export function acquireLock(path: string): () => void {
  if (lockedHere.has(path)) throw new Error(`the data directory is already open in this process (${path})`);
  const token = randomBytes(4).toString('hex');
  const mine = `${path}.${process.pid}.${token}`;
  const content = `${process.pid} ${hostname()} ${token}`;
  writeFileSync(mine, content);
  try {
    for (let tries = 0; tries < TRIES; tries++) {
      try {
        linkSync(mine, path);
        lockedHere.add(path);
        return () => {
          lockedHere.delete(path);
          // Only our own: a lock taken over meanwhile (this one judged stale) is another's now.
          if (contentOf(path) === content) rmSync(path, { force: true });
        };
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      }
      const text = contentOf(path);
      if (text === null) continue; // released meanwhile: try again
      const owner = ownerOf(text);
      if (owner !== null) {
        throw new Error(
          `the data directory is in use by process ${owner} (lock file ${path}); embedded storage serves one process — use COURIER_DATABASE_URL to run several. ` +
            `If no Courier is running on it (process ${owner} being another program since a restart, or gone with its container), delete the lock file`,
        );
      }
      if (!removeStale(path, text, mine)) pause(5);
    }
    throw new Error(`could not take the lock file ${path}: other processes kept taking it`);
  } finally {
    rmSync(mine, { force: true });
  }
}

function contentOf(path: string): string | null {
  try {
    return readFileSync(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw error;
  }
}

/**
 * The process holding the lock ("pid" or "pid on host") by its file's text, null when its owner is
 * gone (stale). A file of an earlier release holds the pid alone: taken as of this host.
 */
function ownerOf(text: string): string | null {
  // pid, host name (which may hold spaces), token.
  const fields = text.trim().split(' ');
  const pidText = fields[0] ?? '';
  const host = fields.length > 2 ? fields.slice(1, -1).join(' ') : hostname();
  const pid = Number(pidText);
  if (!Number.isInteger(pid) || pid <= 0) return null;
  if (host !== hostname()) return `${pid} on ${host}`;
  // Our own pid in a lock this process does not hold: left by an earlier process of that pid (a
  // container's pid 1, restarted).
  return pid !== process.pid && processAlive(pid) ? String(pid) : null;
}

/**
 * Removes the lock at `path` if it still reads `stale`, holding the guard (linked from `mine`, our
 * own file). False when another process holds the guard: it is removing the stale lock, or has.
 */
function removeStale(path: string, stale: string, mine: string): boolean {
  const guard = `${path}.takeover`;
  try {
    linkSync(mine, guard);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    clearAbandonedGuard(guard);
    return false;
  }
  try {
    if (contentOf(path) === stale) rmSync(path, { force: true });
  } finally {
    rmSync(guard, { force: true });
  }
  return true;
}

function clearAbandonedGuard(guard: string): void {
  try {
    if (Date.now() - statSync(guard).mtimeMs > ABANDONED_GUARD_MS) rmSync(guard, { force: true });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
}

/** Opening the store is synchronous; a few milliseconds' wait for another process's takeover. */
function pause(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
