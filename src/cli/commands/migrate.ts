import { openDatabase } from '../../runtime.ts';
import { migrate as applyMigrations } from '../../store/migrate.ts';
import { configOrExit, loggerFor } from '../lifecycle.ts';

/** `courier migrate`: apply pending migrations and exit. */
export async function migrate(): Promise<void> {
  const config = configOrExit();
  const db = await openDatabase(config, loggerFor(config));
  try {
    const applied = await applyMigrations(db, {
      onRetry: ({ migration, attempt, pauseMs }) =>
        process.stderr.write(
          `courier migrate: ${migration} waited too long for a table lock (a long transaction?); undone, trying again in ${pauseMs / 1000} s (try ${attempt + 1})\n`,
        ),
    });
    process.stdout.write(applied.length ? `applied: ${applied.join(', ')}\n` : 'database is up to date\n');
  } finally {
    await db.close();
  }
}
