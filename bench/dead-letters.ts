/**
 * Dead letters at scale: one endpoint's dead letters among other endpoints' deliveries, as an
 * endpoint that went bad leaves them while the others' wait. Times listing them all a page of 250
 * at a time (`GET …/dead-letter`, `courier dlq list`), listing a one-minute window of when they
 * died and a window of half of them, replaying them all (`…/dead-letter/replay`), recovering them
 * by publish time (`…/recover`), all and the last 60 published, and replaying them as `courier
 * dlq replay` does (listed, then by id, 100 a request). The rows are written by SQL, not
 * published: the bench is about reading them, and a million deliveries take seconds to make this
 * way.
 * Usage: tsx bench/dead-letters.ts [dead letters] [other endpoints] [--pglite]   (default 100000 and 10)
 */

import {
  listDeadLetters,
  replayAllDeadLetters,
  replayDeadLetters,
} from '../src/store/queries/dead-letter.ts';
import { makeApp, makeDeadLetters, makeEndpoint } from '../test/support/fixtures.ts';
import { openStore } from './lib.ts';

export interface DeadLetterFigures {
  deadLetters: number;
  /** Deliveries of the other endpoints, all waiting (due tomorrow). */
  otherDeliveries: number;
  /** Dead letters listed per second, every page of 250 after the last. */
  listedPerSec: number;
  /** Milliseconds to list the dead letters that died in one minute (about 60 of them), every page. */
  windowMs: number;
  /** Dead letters listed per second in a window of the older half by when they died (the newer half by id). */
  wideWindowListedPerSec: number;
  /** Dead letters replayed per second in that window, all of them. */
  wideWindowReplayedPerSec: number;
  /** Dead letters replayed per second, all of them. */
  replayedPerSec: number;
  /** Dead letters recovered per second by their messages' publish time, all of them. */
  recoveredPerSec: number;
  /** Milliseconds to recover the last 60 published (one a minute, the highest ids). */
  recoveredRecentMs: number;
  /** Dead letters replayed per second as `courier dlq replay` does: listed, then by id, 100 a request. */
  replayedByIdPerSec: number;
}

export async function measureDeadLetters(
  deadLetters: number,
  others: number,
  embedded = false,
): Promise<DeadLetterFigures> {
  const store = await openStore('bench_dead_letters', embedded);
  const { db } = store;
  try {
    const now = Date.now();
    const app = await makeApp(db, now);
    const endpoints: string[] = [];
    for (let i = 0; i <= others; i++)
      endpoints.push((await makeEndpoint(db, app.id, now, { url: `http://127.0.0.1:1/${i}` })).id);
    const endpointId = endpoints[0]!;
    // Message i died i seconds ago at the endpoint, and waits at every other.
    await makeDeadLetters(db, app.id, endpoints, deadLetters, now);
    await store.analyze();

    const timed = async <T>(run: () => Promise<T>) => {
      const started = performance.now();
      return { result: await run(), ms: performance.now() - started };
    };
    /** The ids of the dead letters, every page of 250 after the last. */
    const listAll = async (window: { since?: number; until?: number } = {}) => {
      const ids: number[] = [];
      for (;;) {
        const page = await listDeadLetters(db, {
          endpointId,
          ...window,
          limit: 250,
          afterId: ids.at(-1),
          now: Date.now(),
        });
        ids.push(...page.map((d) => d.deliveryId));
        if (page.length < 250) return ids;
      }
    };
    const killAll = () =>
      db.query(`update courier_deliveries set state = 'failed' where endpoint_id = $1`, [endpointId]);
    const check = (what: string, got: number, wanted: number) => {
      if (got !== wanted) throw new Error(`${what}: ${got} of ${wanted} dead letters`);
    };
    const perSec = (n: number, ms: number) => Math.round(n / (ms / 1000));

    const listed = await timed(() => listAll());
    check('listed', listed.result.length, deadLetters);
    // Those that died between 30 and 90 s ago, the later bound excluded: messages 31 to 90.
    const windowed = await timed(() => listAll({ since: now - 90_000, until: now - 30_000 }));
    check('listed in the window', windowed.result.length, Math.max(0, Math.min(deadLetters, 90) - 30));
    // Those that died before the middle one: messages past the middle, the higher ids.
    const older = { until: now - Math.floor(deadLetters / 2) * 1000 };
    const half = deadLetters - Math.floor(deadLetters / 2);
    const wide = await timed(() => listAll(older));
    check('listed in the wide window', wide.result.length, half);
    const wideReplayed = await timed(() => replayAllDeadLetters(db, { endpointId, ...older }, Date.now()));
    check('replayed in the wide window', wideReplayed.result, half);
    await killAll();
    const replayed = await timed(() => replayAllDeadLetters(db, { endpointId }, Date.now()));
    check('replayed', replayed.result, deadLetters);
    await killAll();
    // Message i was published 2·deadLetters − i minutes ago.
    const range = { sentSince: now - 2 * deadLetters * 60_000, sentUntil: now };
    const recovered = await timed(() => replayAllDeadLetters(db, { endpointId, ...range }, Date.now()));
    check('recovered', recovered.result, deadLetters);
    await killAll();
    // The last 60 published, one a minute: messages deadLetters − 59 on.
    const recent = { sentSince: now - (deadLetters + 59) * 60_000 };
    const recoveredRecent = await timed(() =>
      replayAllDeadLetters(db, { endpointId, ...recent }, Date.now()),
    );
    check('recovered in the last hour', recoveredRecent.result, Math.min(deadLetters, 60));
    await killAll();
    const byId = await timed(async () => {
      const ids = await listAll();
      let replayed = 0;
      for (let i = 0; i < ids.length; i += 100) {
        const deliveryIds = ids.slice(i, i + 100);
        const batch = { endpointId, deliveryIds, limit: deliveryIds.length };
        replayed += (await replayDeadLetters(db, batch, Date.now())).replayed;
      }
      return replayed;
    });
    check('replayed by id', byId.result, deadLetters);
    return {
      deadLetters,
      otherDeliveries: deadLetters * others,
      listedPerSec: perSec(deadLetters, listed.ms),
      windowMs: Math.round(windowed.ms * 10) / 10,
      wideWindowListedPerSec: perSec(half, wide.ms),
      wideWindowReplayedPerSec: perSec(half, wideReplayed.ms),
      replayedPerSec: perSec(deadLetters, replayed.ms),
      recoveredPerSec: perSec(deadLetters, recovered.ms),
      recoveredRecentMs: Math.round(recoveredRecent.ms * 10) / 10,
      replayedByIdPerSec: perSec(deadLetters, byId.ms),
    };
  } finally {
    await store.drop();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const args = process.argv.slice(2);
  const [dead = 100_000, others = 10] = args.filter((a) => !a.startsWith('--')).map(Number);
  if (!Number.isInteger(dead) || dead < 1 || !Number.isInteger(others) || others < 0) {
    console.error(
      `usage: tsx bench/dead-letters.ts [dead letters] [other endpoints] [--pglite]  (whole numbers: dead letters above 0, other endpoints 0 or more; not ${args.join(' ')})`,
    );
    process.exit(2);
  }
  const embedded = args.includes('--pglite');
  console.log(
    JSON.stringify({
      store: embedded ? 'pglite' : 'postgresql',
      ...(await measureDeadLetters(dead, others, embedded)),
    }),
  );
}
