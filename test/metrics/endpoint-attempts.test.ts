import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.ts';
import { EndpointAttempts, IDLE_MS } from '../../src/metrics/endpoint-attempts.ts';

/** The endpoints with series of their own in a scrape, `other` left out. */
async function namedInScrape(registry: Registry): Promise<string[]> {
  const text = await registry.metrics();
  const ids =
    text.match(/^courier_endpoint_attempts_total\{endpoint_id="(ep_[^"]+)",result="delivered"\}/gm) ?? [];
  return ids.map((line) => line.match(/"(ep_[^"]+)"/)![1]!).sort();
}

async function delivered(registry: Registry, endpoint: string): Promise<number | undefined> {
  const series = `courier_endpoint_attempts_total{endpoint_id="${endpoint}",result="delivered"}`;
  const line = (await registry.metrics()).split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

function attempts(limit: number) {
  const registry = new Registry();
  const clock = new ManualClock();
  return { registry, clock, attempts: new EndpointAttempts(registry, limit, clock) };
}

describe("an endpoint's attempt series", () => {
  it('gives the place of one idle for an hour to an endpoint waiting for one, at the next scrape', async () => {
    const { registry, clock, attempts: a } = attempts(2);
    a.attempted('ep_a', 'delivered');
    a.attempted('ep_b', 'delivered');
    a.attempted('ep_c', 'delivered'); // no place: under other
    clock.advance(IDLE_MS - 60_000);
    a.attempted('ep_b', 'delivered');
    // ep_a idle for 59 minutes: kept.
    expect(await namedInScrape(registry)).toEqual(['ep_a', 'ep_b']);
    a.attempted('ep_c', 'retry');
    clock.advance(60_000);
    // ep_a idle for an hour, ep_b for a minute: ep_a's series ends with this scrape.
    expect(await namedInScrape(registry)).toEqual(['ep_b']);
    a.attempted('ep_c', 'delivered');
    a.attempted('ep_a', 'delivered'); // the places taken again
    expect(await namedInScrape(registry)).toEqual(['ep_b', 'ep_c']);
    expect(await delivered(registry, 'ep_c')).toBe(1);
    expect(await delivered(registry, 'other')).toBe(2);
  });

  it('keeps the places of idle endpoints while no endpoint waits for one', async () => {
    const { registry, clock, attempts: a } = attempts(2);
    a.attempted('ep_a', 'delivered');
    clock.advance(IDLE_MS * 24);
    expect(await namedInScrape(registry)).toEqual(['ep_a']);
    a.attempted('ep_b', 'delivered'); // a place was free: nothing waited
    clock.advance(IDLE_MS);
    expect(await namedInScrape(registry)).toEqual(['ep_a', 'ep_b']);
    // One waits: both idle places are freed.
    a.attempted('ep_c', 'delivered');
    expect(await namedInScrape(registry)).toEqual([]);
    // Having waited until that scrape only, it frees nothing more.
    a.attempted('ep_d', 'delivered');
    clock.advance(IDLE_MS);
    expect(await namedInScrape(registry)).toEqual(['ep_d']);
  });

  it("counts a deleted endpoint's late attempts under other, remembering as many deleted as it has places", async () => {
    const { registry, attempts: a } = attempts(2);
    a.attempted('ep_a', 'delivered');
    a.attempted('ep_b', 'delivered');
    a.forget(['ep_a', 'ep_b', 'ep_unknown']);
    expect(await namedInScrape(registry)).toEqual([]);
    // Attempts in flight as they were deleted: not named again.
    a.attempted('ep_a', 'delivered');
    expect(await delivered(registry, 'other')).toBe(1);
    a.attempted('ep_c', 'delivered');
    a.attempted('ep_d', 'delivered');
    a.forget(['ep_c']); // three remembered deleted: ep_a, the oldest, is let go
    a.attempted('ep_a', 'delivered');
    a.attempted('ep_b', 'delivered');
    expect(await namedInScrape(registry)).toEqual(['ep_a', 'ep_d']);
    expect(await delivered(registry, 'other')).toBe(2);
  });
});
