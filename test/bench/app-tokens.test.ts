import { describe, expect, it } from 'vitest';
import { measureAppTokens } from '../../bench/app-tokens.ts';

// A tiny run of `npm run bench:app-tokens` so it does not rot; every request of it must succeed.
describe('app tokens benchmark smoke run', () => {
  it.each([
    ['PostgreSQL', false],
    ['PGlite', true],
  ])(
    'answers with the admin token and an application token, by id and uid, on %s',
    { timeout: 60_000 },
    async (_, embedded) => {
      const figures = await measureAppTokens(200, 1, embedded);
      expect(figures).toMatchObject({ requests: 200, rounds: 1 });
      for (const rate of [
        figures.adminPerSec,
        figures.appTokenByIdPerSec,
        figures.appTokenByUidPerSec,
        figures.madePerSec,
      ])
        expect(rate).toBeGreaterThan(0);
    },
  );
});
