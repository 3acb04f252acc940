/** Publishes n messages into an embedded (PGlite) data directory, then closes it. argv: dataDir url n */
import { systemClock } from '../../src/clock.ts';
import { newId } from '../../src/ids.ts';
import { generateSecret } from '../../src/signing/index.ts';
import { migrate } from '../../src/store/migrate.ts';
import { PgliteDatabase } from '../../src/store/pglite.ts';
import { publish } from '../../src/store/queries/publish.ts';
import { createApplication } from '../../src/store/repos/applications.ts';
import { createEndpoint } from '../../src/store/repos/endpoints.ts';
import { payload } from '../lib.ts';

const [dataDir, url, nArg] = process.argv.slice(2);
const n = Number(nArg);
const endpoints = 20;
const db = await PgliteDatabase.open({ dataDir });
await migrate(db);
const now = systemClock.now();
const app = await createApplication(db, newId('app', now), { name: 'bench' }, now);
for (let i = 0; i < endpoints; i++) {
  await db.transaction((tx) =>
    createEndpoint(tx, {
      id: newId('ep', now),
      appId: app.id,
      fields: { url: `${url}/ep${i}`, eventTypes: [`e${i}`], maxInFlight: 50, rateLimit: 100_000 },
      secret: generateSecret(),
      now,
    }),
  );
}
const body = Buffer.from(payload());
const started = performance.now();
for (let i = 0; i < n; i++) {
  const t = systemClock.now();
  await publish(db, {
    appId: app.id,
    messageId: newId('msg', t),
    eventType: `e${i % endpoints}`,
    payload: body,
    now: t,
  });
}
console.log(`publishPerSec=${n / ((performance.now() - started) / 1000)}`);
await db.close();
