import { describe, expect, it } from 'vitest';
import { measureMessageStatus } from '../../bench/message-status.ts';

// A tiny run of `npm run bench:message-status` so it does not rot; it fails unless every page is
// walked and every message's counts are what its deliveries and attempts say, and unless the
// messages failed somewhere are those listed for status=2.
describe('message status benchmark smoke run', () => {
  it.each([
    ['PostgreSQL', false],
    ['PGlite', true],
  ])(
    'lists every message with where it stands at its endpoints on %s',
    { timeout: 60_000 },
    async (_, embedded) => {
      const figures = await measureMessageStatus(600, 12, embedded);
      expect(figures).toMatchObject({ messages: 600, endpoints: 12 });
      for (const ms of [
        figures.page50Ms,
        figures.page50WithStatusMs,
        figures.page250Ms,
        figures.page250WithStatusMs,
        figures.page50FailedMs,
        figures.noneSendingMs,
      ]) {
        expect(ms).toBeGreaterThan(0);
      }
    },
  );
});
