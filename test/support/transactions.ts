import { expect } from 'vitest';
/** Deterministic interleavings: a transaction held open (its locks held, nothing committed), and the NOTIFYs heard. */
import type { Database, Transaction } from '../../src/store/db.ts';

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

/** Waits until some session is waiting for a lock the session `pid` holds. */
export async function blockedBy(db: Database, pid: number): Promise<void> {
  for (let i = 0; i < 200; i++) {
    const { rows } = await db.query('select 1 from pg_stat_activity where $1 = any(pg_blocking_pids(pid))', [
      pid,
    ]);
    if (rows.length > 0) return;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error(`nothing blocked on session ${pid}`);
}

/**
 * Starts `run` while `holder` (a transaction held open by holdOpen) keeps its locks, waits until
 * run is blocked by it, then commits the holder and returns run's result. The holder is committed
 * even when nothing blocks, so a failing test does not leave its locks behind to hang the rest.
 */
export async function blockedUntilCommit<T>(
  db: Database,
  holder: { pid: number; commit(): Promise<void> },
  run: () => Promise<T>,
): Promise<T> {
  const running = run();
  running.catch(() => {});
  try {
    await blockedBy(db, holder.pid);
  } finally {
    await holder.commit();
  }
  return running;
}

/**
 * Runs `run` while `holder` keeps its locks and returns its result, failing if run waits for them
 * instead; the holder is committed either way, so a failing test leaves no locks behind.
 */
export async function notBlockedBy<T>(
  db: Database,
  holder: { pid: number; commit(): Promise<void> },
  run: () => Promise<T>,
): Promise<T> {
  const running = run();
  running.catch(() => {});
  try {
    const blocked = blockedBy(db, holder.pid).then(
      () => true,
      () => false,
    );
    const ended = running.then(
      () => false,
      () => false,
    );
    if (await Promise.race([blocked, ended])) throw new Error(`it waited for session ${holder.pid}'s locks`);
    return await running;
  } finally {
    await holder.commit();
  }
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
 * Counts the NOTIFYs workers would hear. `heard(n)` waits up to 5 s for the count to reach n and
 * returns it, so a test can assert it is exactly n.
 */
export async function listenForWork(db: Database) {
  const { rows } = await db.query<{ channel: string }>('select courier_channel() as channel');
  let heard = 0;
  const unlisten = await db.listen(rows[0]!.channel, () => heard++);
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
