import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { migrate } from '../../src/store/migrate.ts';
import { PgliteDatabase } from '../../src/store/pglite.ts';

describe('embedded storage (PGlite)', () => {
  const dirs: string[] = [];
  const tempDir = () => {
    const dir = mkdtempSync(join(tmpdir(), 'courier-pglite-'));
    dirs.push(dir);
    return dir;
  };
  afterEach(() => {
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  });

  it('lets one process own a data directory, keeps data across reopen, and releases the lock on close', async () => {
    const dir = tempDir();
    const first = await PgliteDatabase.open({ dataDir: dir });
    await migrate(first);
    await first.query(
      `insert into courier_applications (id, name, created_at, updated_at) values ('app_1', 'x', now(), now())`,
    );
    await expect(PgliteDatabase.open({ dataDir: dir })).rejects.toThrow(/already open in this process/);
    await first.close();

    // Another live process (our parent stands in for it) holding the lock keeps us out.
    const held = tempDir();
    writeFileSync(join(held, 'courier.lock'), String(process.ppid));
    await expect(PgliteDatabase.open({ dataDir: held })).rejects.toThrow(/in use by process \d+/);

    const again = await PgliteDatabase.open({ dataDir: dir });
    expect((await again.query('select id from courier_applications')).rows).toEqual([{ id: 'app_1' }]);
    expect(await migrate(again)).toEqual([]);
    await again.close();
  });

  it('takes over a lock left by a process that no longer exists', async () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'courier.lock'), '999999999');
    const db = await PgliteDatabase.open({ dataDir: dir });
    await db.close();
  });
});
