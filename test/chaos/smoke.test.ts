import { describe, expect, it } from 'vitest';
import { runChaos } from '../../chaos/chaos.ts';
import { TEST_DATABASE_URL } from '../support/databases.ts';

// A small chaos run inside `npm test`: 3 worker processes and the API, 300 messages to 8 scripted
// endpoints (500s, 429 with both Retry-After forms, 410, timeouts, resets, an endless body, a cap and
// a rate limit), one kill -9. No PostgreSQL or API restart: other test files share the server.
describe('chaos smoke run', () => {
  it('ends every delivery as the policy dictates, with every request accounted for', {
    timeout: 90_000,
  }, async () => {
    const log: string[] = [];
    const result = await runChaos({
      messages: 300,
      endpoints: 8,
      publishSeconds: 10,
      workers: 3,
      receivers: 1,
      maxKills: 1,
      killEveryMs: [3_000, 5_000],
      pgRestart: false,
      apiRestart: false,
      drainSeconds: 45,
      seed: 20_261_130,
      databaseUrl: TEST_DATABASE_URL,
      command: 'vitest test/chaos/smoke.test.ts',
      log: (line) => log.push(line),
      // The suite's load can stall a receiver and bunch its arrivals; the full run is strict.
      rateSlackMs: 150,
    });
    expect(result.violations.slice(0, 10), `${log.join('\n')}\n${result.table}`).toEqual([]);
    expect(result.table).toContain('| Faults | 1 worker kill -9');
  });
});
