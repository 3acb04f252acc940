/** pg-boss 10.4.2 doing the webhook job, with its batch fetch. argv: url schema batchSize */
import PgBoss from 'pg-boss';
import { DATABASE_URL } from '../lib.ts';
import { post } from './http.ts';

const [url, schema, batchArg] = process.argv.slice(2);
const boss = new PgBoss({
  connectionString: DATABASE_URL,
  schema,
  max: 10,
  supervise: false,
  schedule: false,
});
await boss.start();
await boss.work<{ body: string }>(
  'webhook',
  { batchSize: Number(batchArg), pollingIntervalSeconds: 0.5 },
  async (jobs) => {
    await Promise.all(jobs.map((job) => post(url!, job.data.body)));
  },
);
