/** Publishes n messages into an embedded (PGlite) data directory, then closes it. argv: dataDir url n */
import { systemClock } from '../../src/clock.ts';
import { newId } from '../../src/ids.ts';
import { PgliteDatabase } from '../../src/store/pglite.ts';
import { publish } from '../../src/store/publisher.ts';
import { payload } from '../lib.ts';
import { createBenchApp, ENDPOINTS } from '../scenarios/courier.ts';

const [dataDir, url, nArg] = process.argv.slice(2);
const n = Number(nArg);
const db = await PgliteDatabase.open({ dataDir });
const appId = await createBenchApp(db, url!);
const body = Buffer.from(payload());
const started = performance.now();
for (let i = 0; i < n; i++) {
  const t = systemClock.now();
  await publish(db, {
    appId,
    messageId: newId('msg', t),
    eventType: `e${i % ENDPOINTS}`,
    payload: body,
    now: t,
  });
}
console.log(`publishPerSec=${n / ((performance.now() - started) / 1000)}`);
await db.close();
