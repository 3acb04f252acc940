/** Publishes n messages into an embedded (PGlite) data directory, then closes it. argv: dataDir url n */
import { PgliteDatabase } from '../../src/store/pglite.ts';
import { createBenchApp, publishMany } from '../scenarios/courier.ts';

const [dataDir, url, nArg] = process.argv.slice(2);
const n = Number(nArg);
const db = await PgliteDatabase.open({ dataDir });
const appId = await createBenchApp(db, url!);
// As the PostgreSQL runs publish: the same payloads, as many at once.
const publishPerSec = await publishMany({ db, appId }, n);
console.log(`publishPerSec=${publishPerSec}`);
await db.close();
