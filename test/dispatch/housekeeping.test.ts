import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.ts';
import { Housekeeping } from '../../src/dispatch/housekeeping.ts';
import { silentLogger } from '../../src/logger.ts';
import { PgDatabase } from '../../src/store/pg.ts';
import { freePort } from '../support/ports.ts';

describe('housekeeping', () => {
  it('warns when it cannot take over expired leases: their deliveries would stay stuck unseen', async () => {
    const db = new PgDatabase({
      connectionString: `postgres://127.0.0.1:${await freePort()}/test`,
      poolSize: 1,
    });
    const warnings: string[] = [];
    const log = { ...silentLogger, warn: (_o: object, msg?: string) => void warnings.push(msg ?? '') };
    const housekeeping = new Housekeeping(db, new ManualClock(Date.UTC(2026, 0, 1)), log, () => {}, null);
    try {
      await housekeeping.start(60_000);
      expect(warnings).toEqual(['taking over expired leases failed']);
    } finally {
      await housekeeping.stop();
      await db.close();
    }
  });
});
