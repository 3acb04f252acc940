import { describe, expect, it } from 'vitest';
import { measureBulkReplay } from '../../bench/bulk-replay.ts';

// A tiny run of `npm run bench:replay` so it does not rot; it fails unless every message is resent
// and replayed.
describe('bulk replay benchmark smoke run', () => {
  it.each([
    ['PostgreSQL', false],
    ['PGlite', true],
  ])(
    'resends every delivered message, then every dead letter by bulk replay and by the dead-letter replay, then replays them all to a new endpoint, on %s',
    { timeout: 60_000 },
    async (_, embedded) => {
      const figures = await measureBulkReplay(1200, embedded);
      expect(figures.messages).toBe(1200);
      expect(figures.deliveredPerSec).toBeGreaterThan(0);
      expect(figures.deadPerSec).toBeGreaterThan(0);
      expect(figures.deadLettersPerSec).toBeGreaterThan(0);
      expect(figures.missingPerSec).toBeGreaterThan(0);
    },
  );
});
