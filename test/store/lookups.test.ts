import { afterEach, describe, expect, it } from 'vitest';
import { PgDatabase } from '../../src/store/pg.ts';
import { createApplication, deleteApplication, findApplication } from '../../src/store/repos/applications.ts';
import { findTokenByHash, hashToken, insertTokenIfAbsent } from '../../src/store/repos/tokens.ts';
import { BACKENDS, openTestDatabase, TEST_DATABASE_URL, type TestDatabase } from '../support/databases.ts';

const NOW = Date.UTC(2026, 11, 2);

describe.each(BACKENDS)('the lookups every API request makes (%s)', (backend) => {
  let t: TestDatabase;
  afterEach(async () => {
    await t.drop();
  });

  it('find an application by id or uid, and a token by its hash, call after call', async () => {
    t = await openTestDatabase(backend);
    const app = await createApplication(t.db, 'app_1', { name: 'Shop', uid: 'shop' }, NOW);
    await createApplication(t.db, 'app_2', { name: 'Gone', uid: 'gone' }, NOW);
    await deleteApplication(t.db, 'app_2', NOW + 1);
    await insertTokenIfAbsent(t.db, 'ci', hashToken('courier_secret'), NOW);
    // Twice each: on PostgreSQL the later calls run the statements the first ones prepared.
    for (let i = 0; i < 2; i++) {
      expect(await findApplication(t.db, 'app_1')).toEqual(app);
      expect(await findApplication(t.db, 'shop')).toEqual(app);
      expect(await findApplication(t.db, 'app_2')).toBeNull();
      expect(await findApplication(t.db, 'gone')).toBeNull();
      expect(await findApplication(t.db, 'nope')).toBeNull();
      expect(await findTokenByHash(t.db, hashToken('courier_secret'))).toMatchObject({ name: 'ci' });
      expect(await findTokenByHash(t.db, hashToken('courier_other'))).toBeNull();
    }
  });
});

describe('the lookups on PostgreSQL', () => {
  it('go by their prepared names, parsed and planned once per connection', async () => {
    const t = await openTestDatabase('pg');
    const one = new PgDatabase({ connectionString: TEST_DATABASE_URL, schema: t.schema, poolSize: 1 });
    try {
      await createApplication(one, 'app_1', { name: 'Shop' }, NOW);
      await findApplication(one, 'app_1');
      await findTokenByHash(one, hashToken('courier_secret'));
      const { rows } = await one.query<{ name: string }>(
        `select name from pg_prepared_statements where name like 'courier_find_%' order by name`,
      );
      expect(rows.map((r) => r.name)).toEqual(['courier_find_application', 'courier_find_token']);
    } finally {
      await one.close();
      await t.drop();
    }
  });
});
