/**
 * The embedded store's exclusive lock: a file holding the owner's pid and host name, next to the
 * data. A lock whose owner is gone (a crash, kill -9) is taken over. Whether a process lives can
 * only be told on its own host: a lock from another host name (another container on a shared
 * volume, where both may be pid 1) is never judged stale.
 *
 * The file appears with its pid already in it (written to a file of our own, then hard-linked into
 * place), and a stale one is moved aside by a rename that only one process can win, then checked:
 * created empty and written afterwards, or removed with rm, a lock could be judged stale while its
 * owner was still writing it, or removed after another process had just taken it over, and two
 * processes got it at once (seen with eight started together).
 */
import { randomBytes } from 'node:crypto';
import { linkSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';

const lockedHere = new Set<string>();
const TRIES = 10;

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
      const owner = ownerOf(path);
      if (owner === 'gone') continue; // released meanwhile: try again
      if (owner !== null) {
        throw new Error(
          `the data directory is in use by process ${owner} (lock file ${path}); embedded storage serves one process — use COURIER_DATABASE_URL to run several. ` +
            `If no Courier is running on it (process ${owner} being another program since a restart, or gone with its container), delete the lock file`,
        );
      }
      takeOverStale(path);
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
 * The process holding the lock ("pid" or "pid on host"), null when its owner is gone (stale),
 * 'gone' when no file. A file of an earlier release holds the pid alone: taken as of this host.
 */
function ownerOf(path: string): string | null | 'gone' {
  const text = contentOf(path);
  if (text === null) return 'gone';
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
 * Moves a stale lock aside. Another process may have replaced it since we read it; the rename then
 * took a live lock, which is put back (a link, so a lock taken meanwhile is not overwritten).
 */
function takeOverStale(path: string): void {
  const aside = `${path}.stale.${process.pid}.${randomBytes(4).toString('hex')}`;
  try {
    renameSync(path, aside);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return; // another process moved it
    throw error;
  }
  if (ownerOf(aside) !== null) {
    try {
      linkSync(aside, path);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
  }
  rmSync(aside, { force: true });
}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
