import { afterEach, describe, expect, it, vi } from 'vitest';
import { PgDatabase } from '../../src/store/pg.ts';
import {
  createApplication,
  deleteApplication,
  findApplication,
  updateApplication,
} from '../../src/store/repos/applications.ts';
import { findTokenByHash, hashToken, insertTokenIfAbsent } from '../../src/store/repos/tokens.ts';
import { BACKENDS, openTestDatabase, TEST_DATABASE_URL, type TestDatabase } from '../support/databases.ts';
import { intercepting } from '../support/intercepting.ts';

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

describe.each(BACKENDS)("an application's lookups on a database (%s)", (backend) => {
  let t: TestDatabase;
  afterEach(async () => {
    await t.drop();
  });

  it('go together while one is under way, and each sees what committed before it was asked for', async () => {
    t = await openTestDatabase(backend);
    const reads: unknown[] = [];
    let release = () => {};
    const held = new Promise<void>((resolve) => (release = resolve));
    let holding = true;
    const db = intercepting(t.db, async (sql, params, run) => {
      if (!sql.includes('courier_applications where (id = any')) return run();
      reads.push(params![0]);
      // The first lookup is held until the test lets it go, as a slow query would be.
      if (holding) {
        holding = false;
        const answer = await run();
        await held;
        return answer;
      }
      return run();
    });
    const shop = await createApplication(t.db, 'app_1', { name: 'Shop', uid: 'shop' }, NOW);

    const first = findApplication(db, 'shop');
    await vi.waitFor(() => expect(reads).toHaveLength(1));
    // Renamed after the first lookup read: those asked for now must see the new uid.
    await updateApplication(t.db, 'app_1', { name: 'Shop', uid: 'store' }, NOW + 1);
    const later = Promise.all([
      findApplication(db, 'store'),
      findApplication(db, 'shop'),
      findApplication(db, 'app_1'),
      findApplication(db, 'store'),
    ]);
    release();
    expect(await first).toEqual(shop);
    const renamed = { ...shop, uid: 'store', updatedAt: NOW + 1 };
    expect(await later).toEqual([renamed, null, renamed, renamed]);
    expect(reads).toEqual([['shop'], ['store', 'shop', 'app_1']]);
  });

  it("take an id's match before a uid's, skip a key with a NUL, and read alone inside a transaction", async () => {
    t = await openTestDatabase(backend);
    // A uid shaped like another application's id: the API refuses one, an old row might have it.
    const byId = await createApplication(t.db, 'app_1', { name: 'First' }, NOW);
    const byUid = await createApplication(t.db, 'app_2', { name: 'Second', uid: 'app_1' }, NOW);
    expect(await Promise.all([findApplication(t.db, 'app_1'), findApplication(t.db, 'app_2')])).toEqual([
      byId,
      byUid,
    ]);
    // A path's %00 can be no application's: not sent, as PostgreSQL would fail the batch with it.
    expect(await Promise.all([findApplication(t.db, 'app\0'), findApplication(t.db, 'app_2')])).toEqual([
      null,
      byUid,
    ]);

    // While the database's lookup is held, a transaction's own goes ahead, and sees its own writes.
    let release = () => {};
    const held = new Promise<void>((resolve) => (release = resolve));
    const db = intercepting(t.db, async (sql, _params, run) => {
      if (sql.includes('courier_applications where (id = any')) await held;
      return run();
    });
    const waiting = findApplication(db, 'app_1');
    const made = await db.transaction(async (tx) => {
      await createApplication(tx, 'app_3', { name: 'Third', uid: 'third' }, NOW);
      return findApplication(tx, 'third');
    });
    expect(made).toMatchObject({ id: 'app_3' });
    release();
    expect(await waiting).toEqual(byId);
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
      expect(rows.map((r) => r.name)).toEqual(['courier_find_applications', 'courier_find_token']);
    } finally {
      await one.close();
      await t.drop();
    }
  });
});
