import { describe, expect, it } from 'vitest';
import { measureEndpointSeries } from '../../bench/endpoint-series.ts';

// A tiny run of `npm run bench:endpoint-series` so it does not rot; it fails unless the scrape
// holds every endpoint's four series and the other endpoints' four.
describe('endpoint series benchmark smoke run', () => {
  it('times an attempt counted and a scrape', async () => {
    const costs = await measureEndpointSeries(10);
    expect(costs).toMatchObject({ endpoints: 10, series: 44 });
    for (const figure of [
      costs.attemptNsWith,
      costs.attemptNsWithout,
      costs.scrapeMsP50,
      costs.scrapeBytes,
    ]) {
      expect(figure).toBeGreaterThan(0);
    }
  });
});
