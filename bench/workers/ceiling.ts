/** undici alone: N POSTs at a fixed concurrency, no database. argv: url count concurrency */
import { payload } from '../lib.ts';
import { post } from './http.ts';

const [url, countArg, concurrencyArg] = process.argv.slice(2);
const count = Number(countArg);
const body = payload();
let next = 0;
await Promise.all(
  Array.from({ length: Number(concurrencyArg) }, async () => {
    while (next < count) {
      next++;
      await post(url!, body);
    }
  }),
);
process.exit(0);
