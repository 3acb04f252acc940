import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { ManualClock } from '../../src/clock.ts';
import { Wakeups } from '../../src/dispatch/wakeups.ts';
import { newId } from '../../src/ids.ts';
import { silentLogger } from '../../src/logger.ts';
import type { Database } from '../../src/store/db.ts';
import { PgDatabase } from '../../src/store/pg.ts';
import {
  HEARING_CHECK,
  notifyRelays,
  notifyWorkers,
  sendHearingCheck,
} from '../../src/store/queries/notify-workers.ts';
import { recordOperationalEvents } from '../../src/store/queries/operational-events.ts';
import { BACKENDS, openTestDatabase, TEST_DATABASE_URL, type TestDatabase } from '../support/databases.ts';
import { errorLog, wakeupsListeningThrough } from '../support/wakeups.ts';

describe('Wakeups.signalAt (work due later on an endpoint a completion freed)', () => {
  const clock = new ManualClock(Date.UTC(2026, 0, 1, 12));
  // signalAt needs no database: only start() listens.
  const wakeups = () => new Wakeups({} as Database, clock, silentLogger, 30_000);
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  /** Starts waiting; reports whether the wait has ended. */
  function waiting(w: Wakeups): () => boolean {
    let woken = false;
    void w.wait().then(() => {
      woken = true;
    });
    return () => woken;
  }

  it('wakes the worker at the earliest instant it was given, then takes a later one', async () => {
    const w = wakeups();
    w.signalAt(clock.now() + 1_000);
    w.signalAt(clock.now() + 60);
    w.signalAt(clock.now() + 500);
    const woken = waiting(w);
    await vi.advanceTimersByTimeAsync(59);
    expect(woken()).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(woken()).toBe(true);

    // The 500 and 1,000 ms instants were dropped for the earlier one; a new instant after it fired is kept.
    const again = waiting(w);
    await vi.advanceTimersByTimeAsync(1_000);
    expect(again()).toBe(false);
    w.signalAt(clock.now() + 200);
    await vi.advanceTimersByTimeAsync(200);
    expect(again()).toBe(true);
  });

  it('leaves no timer behind once stopped, and sets none after', async () => {
    const w = wakeups();
    w.signalAt(clock.now() + 60_000);
    expect(vi.getTimerCount()).toBe(1);
    await w.stop();
    expect(vi.getTimerCount()).toBe(0);
    w.signalAt(clock.now() + 60);
    expect(vi.getTimerCount()).toBe(0);
  });
});

describe('Wakeups.sleep (a back-off after failures)', () => {
  const clock = new ManualClock(Date.UTC(2026, 0, 1, 12));
  const wakeups = () => new Wakeups({} as Database, clock, silentLogger, 30_000);
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  function sleeping(w: Wakeups, ms: number): () => boolean {
    let woken = false;
    void w.sleep(ms).then(() => {
      woken = true;
    });
    return () => woken;
  }

  it('lasts its time whatever signals come, with one timer', async () => {
    const w = wakeups();
    const woken = sleeping(w, 5_000);
    expect(vi.getTimerCount()).toBe(1);
    w.signal();
    await vi.advanceTimersByTimeAsync(4_999);
    expect(woken()).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(woken()).toBe(true);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('is cut short by halt(), and none lasts after it', async () => {
    const w = wakeups();
    const woken = sleeping(w, 5_000);
    w.halt();
    await vi.advanceTimersByTimeAsync(0);
    expect(woken()).toBe(true);
    expect(vi.getTimerCount()).toBe(0);
    const later = sleeping(w, 5_000);
    await vi.advanceTimersByTimeAsync(0);
    expect(later()).toBe(true);
  });
});

describe.each(BACKENDS)('Wakeups on %s: operational events wake the relay, not the claims', (backend) => {
  const clock = new ManualClock(Date.UTC(2026, 0, 1, 12));
  let t: TestDatabase;
  beforeEach(async () => {
    t = await openTestDatabase(backend);
  });
  afterEach(async () => {
    await t.drop();
  });

  const event = () => ({
    id: newId('opev', clock.now()),
    type: 'endpoint.created',
    appId: null,
    endpointId: null,
    data: {},
    createdAt: clock.now(),
  });
  const until = async (done: () => boolean) => {
    for (let i = 0; i < 200 && !done(); i++) await new Promise((r) => setTimeout(r, 10));
  };

  it('calls the relay at the commit of a relay notice; new work still signals the claims', async () => {
    let notices = 0;
    const w = new Wakeups(t.db, clock, silentLogger, 30_000, () => notices++);
    await w.start();
    try {
      await t.db.transaction(async (tx) => {
        await recordOperationalEvents(tx, [event()], true);
        await notifyRelays(tx);
        await new Promise((r) => setTimeout(r, 50));
        expect(notices).toBe(0); // not before the commit
      });
      await until(() => notices > 0);
      expect(notices).toBe(1);
      // A worker's own events: its relay is nudged in process, no other's.
      await t.db.transaction((tx) => recordOperationalEvents(tx, [event()], true));
      await notifyWorkers(t.db);
      let woken = false;
      void w.wait(5_000).then(() => {
        woken = true;
      });
      await until(() => woken);
      expect([woken, notices]).toEqual([true, 1]);
    } finally {
      await w.stop();
    }
  });

  it("hears its own check at its start, which wakes no claim, nor does another worker's", async () => {
    // Another listener on the same channel sees what reached the worker's, in the same order.
    const { rows } = await t.db.query<{ channel: string }>('select courier_channel() as channel');
    const seen: string[] = [];
    const unlisten = await t.db.listen(rows[0]!.channel, (payload) => seen.push(payload));
    const w = new Wakeups(t.db, clock, silentLogger, 30_000);
    await w.start();
    try {
      w.clear(); // what connecting signalled, before the check was sent
      let woken = false;
      void w.wait(5_000).then(() => {
        woken = true;
      });
      expect(await w.hearing).toBe(true);
      await sendHearingCheck(t.db, `${HEARING_CHECK}another-worker`);
      await until(() => seen.includes(`${HEARING_CHECK}another-worker`));
      expect(seen.filter((p) => p.startsWith(HEARING_CHECK))).toHaveLength(2);
      expect(woken).toBe(false);
      await notifyWorkers(t.db);
      await until(() => woken);
      expect(woken).toBe(true);
    } finally {
      await w.stop();
      await unlisten();
    }
  });

  it('checks nothing when stopped while it started', async () => {
    const w = new Wakeups(t.db, clock, silentLogger, 30_000);
    const starting = w.start();
    w.halt();
    await starting;
    expect(await w.hearing).toBe(null);
    await w.stop();
  });
});

describe('Wakeups on PostgreSQL, their LISTEN connection cut by the server', () => {
  const clock = new ManualClock(Date.UTC(2026, 0, 1, 12));
  const until = async (done: () => boolean) => {
    for (let i = 0; i < 300 && !done(); i++) await new Promise((r) => setTimeout(r, 10));
  };

  it('wake the claims once it is back (work notified meanwhile was missed), check again that they hear, and hear new work', async () => {
    const t = await openTestDatabase('pg');
    const w = new Wakeups(t.db, clock, silentLogger, 30_000);
    await w.start();
    try {
      const atStart = w.hearing;
      expect(await atStart).toBe(true);
      w.clear();
      let woken = false;
      void w.wait(5_000).then(() => {
        woken = true;
      });
      const { rows } = await t.db.query<{ channel: string }>('select courier_channel() as channel');
      const cut = await t.db.query(
        'select pg_terminate_backend(pid) from pg_stat_activity where query = $1',
        [`LISTEN "${rows[0]!.channel}"`],
      );
      expect(cut.rowCount).toBe(1);
      await until(() => woken);
      expect(woken).toBe(true);
      expect(w.hearing).not.toBe(atStart);
      expect(await w.hearing).toBe(true);
      woken = false;
      void w.wait(5_000).then(() => {
        woken = true;
      });
      await notifyWorkers(t.db);
      await until(() => woken);
      expect(woken).toBe(true);
    } finally {
      await w.stop();
      await t.drop();
    }
  });
});

describe('Wakeups on PostgreSQL whose first LISTEN connection is refused', () => {
  it('check that they hear once a later one is made, without a word of the first check, which could not be heard', async () => {
    const t = await openTestDatabase('pg');
    const role = `t_courier_listener_${process.pid}`;
    await t.db.query(`create role ${role} login connection limit 0`);
    const url = new URL(TEST_DATABASE_URL);
    url.username = role;
    const listener = new PgDatabase({ connectionString: url.toString(), poolSize: 1 });
    // Statements as the test's own role; the LISTEN as the one refused a connection for now.
    const { w, errors } = wakeupsListeningThrough(t.db, listener);
    try {
      await w.start();
      const atStart = w.hearing;
      await t.db.query(`alter role ${role} connection limit -1`);
      expect(await atStart).toBe(null);
      expect(await w.hearing).toBe(true);
      expect(errors).toEqual([]);
    } finally {
      await w.stop();
      await listener.close();
      await t.db.query(`drop role ${role}`);
      await t.drop();
    }
  });
});

/**
 * A database for wake-ups on virtual time: it names a channel, keeps the checks sent, and hands
 * its listen() callbacks to `listened`.
 */
function fakeListening(listened: (onNotify: (payload: string) => void, onReconnect: () => void) => void) {
  const sent: string[] = [];
  const db = {
    async query(sql: string, params?: unknown[]) {
      if (sql.includes('as channel')) return { rows: [{ channel: 'courier_work' }], rowCount: 1 };
      sent.push(params![0] as string);
      return { rows: [], rowCount: 1 };
    },
    async listen(_channel: string, onNotify: (payload: string) => void, onReconnect?: () => void) {
      listened(onNotify, onReconnect!);
      return async () => {};
    },
  } as unknown as Database;
  return { db, sent };
}

describe('Wakeups whose LISTEN connection comes back while a check is under way', () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  it('end that check unjudged, not as unheard, and judge the one they send then', async () => {
    let notify!: (payload: string) => void;
    let reconnect!: () => void;
    const { db, sent } = fakeListening((onNotify, onReconnect) => {
      notify = onNotify;
      reconnect = onReconnect;
    });
    const { log, errors } = errorLog();
    const w = new Wakeups(db, new ManualClock(Date.UTC(2026, 0, 1, 12)), log, 30_000);
    await w.start();
    const judged: unknown[] = [];
    void w.hearing.then((heard) => judged.push(heard));
    await vi.advanceTimersByTimeAsync(0); // its send answered: its 5 s running
    reconnect(); // its notification lost with the old connection
    void w.hearing.then((heard) => judged.push(heard));
    await vi.advanceTimersByTimeAsync(0);
    expect(sent).toHaveLength(2);
    notify(sent[1]!);
    await vi.advanceTimersByTimeAsync(10_000);
    expect([judged, errors]).toEqual([[null, true], []]);
    await w.stop();
  });

  it('judge one check when the connection is told it is back before start() asks for its own', async () => {
    let notify!: (payload: string) => void;
    const { db, sent } = fakeListening((onNotify, onReconnect) => {
      notify = onNotify;
      onReconnect(); // subscribed while its listener was reconnecting
      void w.hearing.then((heard) => judged.push(heard)); // the check that reconnect began
    });
    const { log, errors } = errorLog();
    const w = new Wakeups(db, new ManualClock(Date.UTC(2026, 0, 1, 12)), log, 30_000);
    const judged: unknown[] = [];
    await w.start();
    void w.hearing.then((heard) => judged.push(heard));
    await vi.advanceTimersByTimeAsync(0);
    notify(sent.at(-1)!);
    await vi.advanceTimersByTimeAsync(10_000);
    expect([judged, errors]).toEqual([[null, true], []]);
    await w.stop();
  });
});
