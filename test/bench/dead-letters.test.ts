import { describe, expect, it } from 'vitest';
import { measureDeadLetters } from '../../bench/dead-letters.ts';

// A tiny run of `npm run bench:dead-letters` so it does not rot; it fails unless every dead letter
// is listed, replayed and recovered, and each window lists exactly its own.
describe('dead letters benchmark smoke run', () => {
  it.each([
    ['PostgreSQL', false],
    ['PGlite', true],
  ])(
    'lists, replays, recovers and replays by id every dead letter of an endpoint among others on %s',
    {
      timeout: 60_000,
    },
    async (_, embedded) => {
      const figures = await measureDeadLetters(1200, 3, embedded);
      expect(figures).toMatchObject({ deadLetters: 1200, otherDeliveries: 3600 });
      expect(figures.listedPerSec).toBeGreaterThan(0);
      expect(figures.windowMs).toBeGreaterThan(0);
      expect(figures.wideWindowListedPerSec).toBeGreaterThan(0);
      expect(figures.wideWindowReplayedPerSec).toBeGreaterThan(0);
      expect(figures.replayedPerSec).toBeGreaterThan(0);
      expect(figures.recoveredPerSec).toBeGreaterThan(0);
      expect(figures.recoveredRecentMs).toBeGreaterThan(0);
      expect(figures.replayedByIdPerSec).toBeGreaterThan(0);
    },
  );
});
