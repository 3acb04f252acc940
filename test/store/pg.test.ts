import { describe, expect, it } from 'vitest';
import { PgDatabase } from '../../src/store/pg.ts';
import { TEST_DATABASE_URL } from '../support/databases.ts';

describe('PgDatabase connections', () => {
  it('work in their schema, with JIT off (compiling a plan costs more than any Courier statement)', async () => {
    const db = new PgDatabase({ connectionString: TEST_DATABASE_URL, schema: 'courier_probe', poolSize: 1 });
    try {
      const { rows } = await db.query<{ jit: string; path: string }>(
        `select current_setting('jit') as jit, current_setting('search_path') as path`,
      );
      expect(rows).toEqual([{ jit: 'off', path: 'courier_probe' }]);
    } finally {
      await db.close();
    }
  });
});
