/**
 * The hand-written "claim → POST → complete" pipeline: the in-run ceiling for a PostgreSQL queue.
 * Claim 100 with SKIP LOCKED, POST them, complete them with one UPDATE. argv: url schema loops
 */
import pg from 'pg';
import { DATABASE_URL } from '../lib.ts';
import { post } from './http.ts';

const [url, schema, loopsArg] = process.argv.slice(2);
const pool = new pg.Pool({
  connectionString: DATABASE_URL,
  max: Number(loopsArg) + 1,
  options: `-c search_path=${schema}`,
});

async function loop(): Promise<void> {
  for (;;) {
    const { rows } = await pool.query<{ id: string; body: string }>(
      `with claimed as (
         select id from raw_jobs where state = 'pending' and run_at <= now()
         order by run_at limit 100 for update skip locked)
       update raw_jobs j set state = 'running' from claimed where j.id = claimed.id
       returning j.id, j.body`,
    );
    if (rows.length === 0) {
      await new Promise((resolve) => setTimeout(resolve, 5));
      continue;
    }
    await Promise.all(rows.map((r) => post(url!, r.body)));
    await pool.query(`update raw_jobs set state = 'done' where id = any($1::bigint[])`, [
      rows.map((r) => r.id),
    ]);
  }
}

await Promise.all(Array.from({ length: Number(loopsArg) }, loop));
