import type { Database, Queryable, Transaction } from '../../src/store/db.ts';

interface PlanNode {
  'Relation Name'?: string;
  'Index Name'?: string;
  'Actual Rows'?: number;
  'Actual Loops'?: number;
  'Rows Removed by Filter'?: number;
  'Rows Removed by Index Recheck'?: number;
  Plans?: PlanNode[];
}

/**
 * What EXPLAIN ANALYZE saw a statement read: `rows`, every scan node's rows, those its filters
 * dropped included, times its loops (not the index entries an index condition passed by), and
 * `indexes`, the indexes it scanned, in plan order. A statement that should read a page's worth
 * of rows can be checked for not reading the whole table, whatever plan it gets.
 * (PostgreSQL 15 rounds a node's rows per loop to a whole number: a probe finding a row in fewer
 * than half its loops counts none.)
 */
export async function readsOf(
  db: Queryable,
  sql: string,
  params: readonly unknown[],
): Promise<{ rows: number; indexes: string[] }> {
  const { rows } = await db.query<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>(
    `explain (analyze, format json) ${sql}`,
    params,
  );
  const indexes: string[] = [];
  const walk = (node: PlanNode): number => {
    if (node['Index Name'] !== undefined) indexes.push(node['Index Name']);
    const scanned =
      node['Relation Name'] !== undefined || node['Index Name'] !== undefined
        ? ((node['Actual Rows'] ?? 0) +
            (node['Rows Removed by Filter'] ?? 0) +
            (node['Rows Removed by Index Recheck'] ?? 0)) *
          (node['Actual Loops'] ?? 1)
        : 0;
    return scanned + (node.Plans ?? []).reduce((sum, child) => sum + walk(child), 0);
  };
  return { rows: walk(rows[0]!['QUERY PLAN'][0].Plan), indexes };
}

/**
 * A handle on `db` that records what each of these statements read (readsOf, run just before it,
 * inside its transaction when it runs in one, so under the same settings) whenever the code under
 * test runs it: `reads` the rows, `indexes` the indexes, a run each. A test of the store's own
 * functions, with the settings they give their transactions.
 */
export function recordingReads(
  db: Database,
  statements: readonly string[],
): { db: Database; reads: number[]; indexes: string[][] } {
  const reads: number[] = [];
  const indexes: string[][] = [];
  const watch = <Q extends Queryable>(handle: Q): Q =>
    new Proxy(handle, {
      get(target, prop) {
        if (prop === 'query')
          return async (sql: string, params: readonly unknown[] = []) => {
            if (statements.includes(sql)) {
              const read = await readsOf(target, sql, params);
              reads.push(read.rows);
              indexes.push(read.indexes);
            }
            return target.query(sql, params);
          };
        if (prop === 'transaction')
          return <T>(fn: (tx: Transaction) => Promise<T>) =>
            (target as unknown as Database).transaction((tx) => fn(watch(tx)));
        const value = Reflect.get(target, prop, target);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
  return { db: watch(db), reads, indexes };
}
