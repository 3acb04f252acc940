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
 * (seen with eight started together). A guard left by a process that died holding it is judged by
 * its owner's pid, like the lock. Left: a process of an earlier release ignores the guard.
 */
import { randomBytes } from 'node:crypto';
import { linkSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';

const lockedHere = new Set<string>();
/** How long a start keeps trying while other processes take the lock over (they need microseconds). */
const TAKE_FOR_MS = 5_000;

/** Takes the lock at `path` or throws why not; returns the function that releases it. */
export function acquireLock(path: string): () => void {
  if (lockedHere.has(path)) throw new Error(`the data directory is already open in this process (${path})`);
  const token = randomBytes(4).toString('hex');
  const mine = `${path}.${process.pid}.${token}`;
  const content = `${process.pid} ${hostname()} ${token}`;
  writeFileSync(mine, content);
  try {
    for (const deadline = Date.now() + TAKE_FOR_MS; Date.now() < deadline; ) {
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
      if (!removeStale(path, text, mine, content)) pause(5);
    }
    throw new Error(
      `could not take the lock file ${path} within ${TAKE_FOR_MS / 1000} s: other processes kept taking it, or held ${path}.takeover`,
    );
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
function removeStale(path: string, stale: string, mine: string, content: string): boolean {
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
    if (contentOf(guard) === content) rmSync(guard, { force: true });
  }
  return true;
}

/**
 * A guard whose holder is gone (it died within its few system calls) is moved aside, as a stale
 * lock once was; were it replaced meanwhile by a live one, that one is put back. A live holder,
 * however slow, keeps it: the others wait, and at worst give up.
 */
function clearAbandonedGuard(guard: string): void {
  const text = contentOf(guard);
  if (text === null || ownerOf(text) !== null) return;
  const aside = `${guard}.${process.pid}.${randomBytes(4).toString('hex')}`;
  try {
    renameSync(guard, aside);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw error;
  }
  if (contentOf(aside) !== text) {
    try {
      linkSync(aside, guard);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
  }
  rmSync(aside, { force: true });
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
