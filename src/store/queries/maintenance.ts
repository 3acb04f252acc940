import type { Queryable } from '../db.ts';

const HOT_TABLES = ['courier_deliveries', 'courier_endpoint_queues', 'courier_messages', 'courier_attempts'];

/**
 * Refreshes planner statistics of the hot tables when they changed a lot since the last ANALYZE.
 * Autovacuum gets there within a minute or so; until then a freshly filled table has no statistics
 * and the planner may pick sequential scans on the hot paths. Returns the tables analysed.
 */
export async function analyzeIfStale(db: Queryable): Promise<string[]> {
  const { rows } = await db.query<{ relname: string }>(
    `select relname from pg_stat_user_tables
      where schemaname = current_schema() and relname = any($1)
        and n_mod_since_analyze > greatest(1000, n_live_tup / 2)`,
    [HOT_TABLES],
  );
  for (const { relname } of rows) await db.query(`analyze ${relname}`);
  return rows.map((r) => r.relname);
}
