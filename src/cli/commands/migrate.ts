import { openDatabase } from '../../runtime.ts';
import { migrate as applyMigrations } from '../../store/migrate.ts';
import { configOrExit, loggerFor } from '../lifecycle.ts';

/** `courier migrate`: apply pending migrations and exit. */
export async function migrate(): Promise<void> {
  const config = configOrExit();
  const db = await openDatabase(config, loggerFor(config));
  try {
    const applied = await applyMigrations(db);
    process.stdout.write(applied.length ? `applied: ${applied.join(', ')}\n` : 'database is up to date\n');
  } finally {
    await db.close();
  }
}
