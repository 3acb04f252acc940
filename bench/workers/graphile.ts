/** graphile-worker 0.17.3 doing the webhook job. argv: url schema preset(default|performance) */
import { run } from 'graphile-worker';
import { DATABASE_URL } from '../lib.ts';
import { post } from './http.ts';

const [url, schema, preset] = process.argv.slice(2);
// The performance preset is graphile-worker's documented one (worker.graphile.org/docs/performance).
const tuned =
  preset === 'performance'
    ? {
        concurrency: 24,
        maxPoolSize: 25,
        preset: { worker: { localQueue: { size: 500 }, completeJobBatchDelay: 0, failJobBatchDelay: 0 } },
      }
    : {};
await run({
  connectionString: DATABASE_URL,
  schema,
  noHandleSignals: false,
  logger: undefined,
  taskList: {
    webhook: async (job) => {
      await post(url!, (job as { body: string }).body);
    },
  },
  ...tuned,
});
