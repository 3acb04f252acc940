import { describe, expect, it } from 'vitest';
import { measureBulkReplay } from '../../bench/bulk-replay.ts';

// A tiny run of `npm run bench:replay` so it does not rot; it fails unless every message is resent.
describe('bulk replay benchmark smoke run', () => {
  it('resends every delivered message, then every dead letter', { timeout: 60_000 }, async () => {
    const figures = await measureBulkReplay(1200);
    expect(figures.messages).toBe(1200);
    expect(figures.deliveredPerSec).toBeGreaterThan(0);
    expect(figures.deadPerSec).toBeGreaterThan(0);
  });
});
