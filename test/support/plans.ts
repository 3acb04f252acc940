import type { Queryable } from '../../src/store/db.ts';

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
 * The rows a statement read from tables and indexes as EXPLAIN ANALYZE counts them: every scan
 * node's rows, those its filters dropped included, times its loops. A statement that should read
 * a page's worth of rows can be checked for not reading the whole table, whatever plan it gets.
 */
export async function rowsRead(db: Queryable, sql: string, params: unknown[]): Promise<number> {
  const { rows } = await db.query<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>(
    `explain (analyze, format json) ${sql}`,
    params,
  );
  const walk = (node: PlanNode): number => {
    const scanned =
      node['Relation Name'] !== undefined || node['Index Name'] !== undefined
        ? ((node['Actual Rows'] ?? 0) +
            (node['Rows Removed by Filter'] ?? 0) +
            (node['Rows Removed by Index Recheck'] ?? 0)) *
          (node['Actual Loops'] ?? 1)
        : 0;
    return scanned + (node.Plans ?? []).reduce((sum, child) => sum + walk(child), 0);
  };
  return walk(rows[0]!['QUERY PLAN'][0].Plan);
}
