/**
 * The replay routes' speed: messages resent per second by bulk replay, for delivered messages
 * (each gets a new delivery) and for dead letters (each delivery gets a fresh budget), through the
 * store's bulkReplay, one endpoint; dead letters replayed per second by the dead-letter replay
 * (replayAllDeadLetters); and messages sent per second by replay-missing to an endpoint made after
 * them (replayAllMissing); on PostgreSQL or on the embedded PGlite.
 * Usage: tsx bench/bulk-replay.ts [messages] [--pglite]   (default 20000, PostgreSQL)
 */

import { bulkReplay } from '../src/store/queries/bulk-replay.ts';
import { claim } from '../src/store/queries/claim.ts';
import { complete } from '../src/store/queries/complete.ts';
import { replayAllDeadLetters } from '../src/store/queries/dead-letter.ts';
import { replayAllMissing } from '../src/store/queries/replay-missing.ts';
import { deliveredCompletion, makeApp, makeEndpoint, publishJson } from '../test/support/fixtures.ts';
import { openStore } from './lib.ts';

export interface BulkReplayFigures {
  messages: number;
  /** Resends per second of messages delivered before (a new delivery each). */
  deliveredPerSec: number;
  /** Resends per second of dead letters (a fresh budget each). */
  deadPerSec: number;
  /** Dead letters replayed per second by the dead-letter replay (`…/recover`, `courier dlq replay`). */
  deadLettersPerSec: number;
  /** Deliveries made per second by replay-missing, for an endpoint that had none of the messages. */
  missingPerSec: number;
}

export async function measureBulkReplay(messages: number, embedded = false): Promise<BulkReplayFigures> {
  const store = await openStore('bench_replay', embedded);
  const { db } = store;
  try {
    const since = Date.now() - 1000;
    const app = await makeApp(db, since);
    const target = {
      appId: app.id,
      endpointId: (
        await makeEndpoint(db, app.id, since, {
          url: 'http://127.0.0.1:1/',
          maxInFlight: 1000,
          rateLimit: 1_000_000,
        })
      ).id,
    };
    for (let i = 0; i < messages; i += 50) {
      const n = Math.min(50, messages - i);
      await Promise.all(
        Array.from({ length: n }, (_, j) => publishJson(db, app.id, Date.now(), { i: i + j })),
      );
    }
    // Every message delivered once, as a worker would leave it: an attempt logged, no delivery row.
    for (;;) {
      const { deliveries } = await claim(db, {
        owner: 'bench',
        now: Date.now(),
        leaseMs: 60_000,
        limit: 500,
      });
      if (deliveries.length === 0) break;
      await complete(
        db,
        'bench',
        Date.now(),
        deliveries.map((d) => deliveredCompletion(d.id, 1, Date.now())),
        1000,
      );
    }
    await store.analyze();
    /** Messages per second of one replay of every message, which must replay them all. */
    const perSec = async (what: string, replay: () => Promise<number>) => {
      const started = performance.now();
      const replayed = await replay();
      if (replayed !== messages) throw new Error(`${what} replayed ${replayed} of ${messages} messages`);
      return Math.round(messages / ((performance.now() - started) / 1000));
    };
    const bulk = () => bulkReplay(db, target, { since }, Date.now());
    const killAll = () =>
      db.query(
        `update courier_deliveries set state = 'failed', last_error = 'bench' where endpoint_id = $1`,
        [target.endpointId],
      );
    const deliveredPerSec = await perSec('bulk replay', bulk);
    await killAll();
    const deadPerSec = await perSec('bulk replay', bulk);
    await killAll();
    const deadLettersPerSec = await perSec('the dead-letter replay', () =>
      replayAllDeadLetters(db, { endpointId: target.endpointId }, Date.now()),
    );
    const late = await makeEndpoint(db, app.id, Date.now(), { url: 'http://127.0.0.1:1/' });
    const missingPerSec = await perSec('replay-missing', () =>
      replayAllMissing(db, app.id, { endpointId: late.id, since }, Date.now()),
    );
    return { messages, deliveredPerSec, deadPerSec, deadLettersPerSec, missingPerSec };
  } finally {
    await store.drop();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const args = process.argv.slice(2);
  const messages = Number(args.find((a) => !a.startsWith('--')) ?? 20_000);
  const embedded = args.includes('--pglite');
  if (!Number.isInteger(messages) || messages < 1) {
    console.error(
      `usage: tsx bench/bulk-replay.ts [messages] [--pglite]  (messages: a whole number above 0, not ${args[0]})`,
    );
    process.exit(2);
  }
  console.log(
    JSON.stringify({
      store: embedded ? 'pglite' : 'postgresql',
      ...(await measureBulkReplay(messages, embedded)),
    }),
  );
}
