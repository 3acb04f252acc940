/** pg-boss 10.4.2 doing the webhook job, with its batch fetch. argv: url schema batchSize pollers */
import PgBoss from 'pg-boss';
import { DATABASE_URL } from '../lib.ts';
import { post } from './http.ts';

const [url, schema, batchArg, pollersArg] = process.argv.slice(2);
const pollers = Number(pollersArg);
const boss = new PgBoss({
  connectionString: DATABASE_URL,
  schema,
  // Each poller's fetch, and the completion it does not wait for, need a connection at once.
  max: 2 * pollers + 2,
  supervise: false,
  schedule: false,
});
await boss.start();
// After each batch a poller sleeps out the rest of its interval (0.5 s, v10's minimum), so one
// poller of 500 tops out near 1,000/s. v10 dropped teamSize; its maintainer's way to more is more
// work() calls, a poller each (github.com/timgit/pg-boss/issues/659).
for (let i = 0; i < pollers; i++) {
  await boss.work<{ body: string }>(
    'webhook',
    { batchSize: Number(batchArg), pollingIntervalSeconds: 0.5 },
    // The batch's POSTs all at once, as a handler of a batch would send them.
    async (jobs) => {
      await Promise.all(jobs.map((job) => post(url!, job.data.body)));
    },
  );
}
