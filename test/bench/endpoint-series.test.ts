import { describe, expect, it } from 'vitest';
import { measureEndpointSeries } from '../../bench/endpoint-series.ts';

// A tiny run of `npm run bench:endpoint-series` so it does not rot; it fails unless the scrape
// holds every endpoint's four series and the other endpoints' four, and the scrape with the
// endpoints' labels an info series for each.
describe('endpoint series benchmark smoke run', () => {
  it('times an attempt counted, a scrape, and a scrape with the labels read from PostgreSQL', async () => {
    const costs = await measureEndpointSeries(10);
    expect(costs).toMatchObject({ endpoints: 10, series: 44 });
    for (const figure of [
      costs.attemptNsWith,
      costs.attemptNsWithout,
      costs.scrapeMsP50,
      costs.scrapeBytes,
      costs.withInfo.scrapeMsP50,
      costs.withInfo.threadMsP50,
      costs.withInfo.readMsP50,
    ]) {
      expect(figure).toBeGreaterThan(0);
    }
    expect(costs.withInfo.scrapeBytes).toBeGreaterThan(costs.scrapeBytes);
  });
});
