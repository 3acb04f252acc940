import { describe, expect, it } from 'vitest';
import { measureQueueFigures } from '../../bench/queue-figures.ts';

// A tiny run of `npm run bench:queue-figures` so it does not rot; it fails unless the counts read
// are the rows written.
describe('queue figures benchmark smoke run', () => {
  it.each([
    ['PostgreSQL', false],
    ['PGlite', true],
  ])(
    'reads the lag, the deliveries by state and the dead letters on %s',
    { timeout: 60_000 },
    async (_, embedded) => {
      const figures = await measureQueueFigures(2_000, 500, embedded);
      expect(figures).toMatchObject({ scheduled: 2_000, deadLetters: 500 });
      for (const ms of [
        figures.lagMsP50,
        figures.depthMsP50,
        figures.depthVacuumedMsP50,
        figures.deadLettersMsP50,
        figures.deadLettersVacuumedMsP50,
      ]) {
        expect(ms).toBeGreaterThan(0);
      }
    },
  );
});
