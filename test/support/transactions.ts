import { expect } from 'vitest';
/** Deterministic interleavings: a transaction held open (its locks held, nothing committed), and the NOTIFYs heard. */
import type { Database, Transaction } from '../../src/store/db.ts';
import { HEARING_CHECK } from '../../src/store/queries/notify-workers.ts';

/** Runs `work` in a transaction and keeps it open (locks held, nothing committed) until commit(). */
export async function holdOpen(db: Database, work: (tx: Transaction) => Promise<unknown>) {
  let release!: () => void;
  const gate = new Promise<void>((resolve) => {
    release = resolve;
  });
  let started!: (pid: number) => void;
  const pid = new Promise<number>((resolve) => {
    started = resolve;
  });
  const finished = db.transaction(async (tx) => {
    await work(tx);
    const { rows } = await tx.query<{ pid: number }>('select pg_backend_pid() as pid');
    started(rows[0]!.pid);
    await gate;
  });
  finished.catch(() => {});
  return {
    pid: await Promise.race([pid, finished.then(() => -1)]),
    commit: async () => {
      release();
      await finished;
    },
  };
}

/** Waits until some session is waiting for a lock the session `pid` holds; gives up once `stop` says so. */
export async function blockedBy(db: Database, pid: number, stop = () => false): Promise<void> {
  for (let i = 0; i < 200 && !stop(); i++) {
    const { rows } = await db.query('select 1 from pg_stat_activity where $1 = any(pg_blocking_pids(pid))', [
      pid,
    ]);
    if (rows.length > 0) return;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error(`nothing blocked on session ${pid}`);
}

type Holder = { pid: number; commit(): Promise<void> };

/**
 * Starts `run` while `holder` (a transaction held open by holdOpen) keeps its locks, then waits for
 * `meanwhile`; the holder is committed whatever happens, so a failing test does not leave its
 * locks behind to hang the rest. Returns run's result.
 */
async function whileHeld<T>(
  holder: Holder,
  run: () => Promise<T>,
  meanwhile: (running: Promise<T>) => Promise<void>,
): Promise<T> {
  const running = run();
  running.catch(() => {});
  try {
    await meanwhile(running);
  } finally {
    await holder.commit();
  }
  return running;
}

/** Starts `run`, waits until the holder's locks block it, then commits the holder: run goes on. */
export function blockedUntilCommit<T>(db: Database, holder: Holder, run: () => Promise<T>): Promise<T> {
  return whileHeld(holder, run, () => blockedBy(db, holder.pid));
}

/** Runs `run` while the holder keeps its locks, failing if run waits for them instead of passing them by. */
export function notBlockedBy<T>(db: Database, holder: Holder, run: () => Promise<T>): Promise<T> {
  return whileHeld(holder, run, async (running) => {
    let settled = false;
    const ended = running
      .then(
        () => false,
        () => false,
      )
      .finally(() => {
        settled = true;
      });
    // Stops watching once run has ended, before the holder commits and the test moves on.
    const blocked = blockedBy(db, holder.pid, () => settled).then(
      () => true,
      () => false,
    );
    if (await Promise.race([blocked, ended])) throw new Error(`it waited for session ${holder.pid}'s locks`);
  });
}

/**
 * Waits until `n` sessions wait for the locks session `pid` holds. Only the first waiter on a row is
 * blocked by the holder itself; the others queue behind that waiter, so the chain is followed.
 */
export async function waitingBehind(db: Database, pid: number, n: number): Promise<void> {
  await blockedBy(db, pid);
  let waiting = 0;
  for (let i = 0; i < 200 && waiting < n; i++) {
    if (i > 0) await new Promise((r) => setTimeout(r, 10));
    const { rows } = await db.query<{ n: number }>(
      `with recursive w(pid) as (
         select pid from pg_stat_activity where $1 = any(pg_blocking_pids(pid))
         union select a.pid from pg_stat_activity a join w on w.pid = any(pg_blocking_pids(a.pid)))
       select count(*)::int as n from w`,
      [pid],
    );
    waiting = rows[0]!.n;
  }
  expect(waiting, `sessions waiting behind ${pid}`).toBe(n);
}

/**
 * Counts the NOTIFYs workers would hear as work (not a worker's check that it hears them).
 * `heard(n)` waits up to 5 s for the count to reach n and returns it, so a test can assert it is
 * exactly n.
 */
export async function listenForWork(db: Database) {
  const { rows } = await db.query<{ channel: string }>('select courier_channel() as channel');
  let heard = 0;
  const unlisten = await db.listen(rows[0]!.channel, (payload) => {
    if (!payload.startsWith(HEARING_CHECK)) heard++;
  });
  heard = 0; // a new LISTEN connection wakes its subscribers once (for notifications it missed)
  return {
    async heard(n: number): Promise<number> {
      const deadline = Date.now() + 5_000;
      while (heard < n && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
      return heard;
    },
    stop: unlisten,
  };
}
