import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.ts';
import { type AttemptResult, EndpointAttempts, IDLE_MS } from '../../src/metrics/endpoint-attempts.ts';

function attempts(limit: number) {
  const registry = new Registry();
  const clock = new ManualClock();
  const counted = new EndpointAttempts(registry, limit, clock);
  const attempted = (...endpoints: string[]) => {
    for (const endpoint of endpoints) counted.attempted(endpoint, 'delivered');
  };
  /** A scrape: the endpoints with series of their own in it, `other` left out. */
  const scrape = async () => {
    const text = await registry.metrics();
    const named = text.match(
      /^courier_endpoint_attempts_total\{endpoint_id="ep_[^"]+",result="delivered"\}/gm,
    );
    return (named ?? []).map((line) => line.match(/"(ep_[^"]+)"/)![1]!).sort();
  };
  /** The counter's value, read as a scrape reads it. */
  const value = async (endpoint: string, result: AttemptResult = 'delivered') => {
    const { values } = await registry.getSingleMetric('courier_endpoint_attempts_total')!.get();
    return values.find((v) => v.labels.endpoint_id === endpoint && v.labels.result === result)?.value;
  };
  return { clock, counted, attempted, scrape, value };
}

describe("an endpoint's attempt series", () => {
  it('is shown at 0 in a scrape before it counts, its attempts until then under other', async () => {
    const { attempted, scrape, value } = attempts(2);
    attempted('ep_a', 'ep_a');
    expect(await value('ep_a')).toBe(0);
    expect(await value('other')).toBe(2);
    expect(await scrape()).toEqual(['ep_a']);
    attempted('ep_a');
    expect(await value('ep_a')).toBe(1);
    expect(await value('other')).toBe(2);
  });

  it('gives the place of one idle for an hour to an endpoint waiting for one, at the next scrape', async () => {
    const { clock, attempted, scrape, value } = attempts(2);
    attempted('ep_a', 'ep_b');
    await scrape();
    attempted('ep_c'); // no place: waits
    clock.advance(IDLE_MS - 60_000);
    attempted('ep_b');
    // ep_a idle for 59 minutes: kept.
    expect(await scrape()).toEqual(['ep_a', 'ep_b']);
    attempted('ep_c');
    clock.advance(60_000);
    // ep_a idle for an hour, ep_b for a minute: ep_a's series ends with this scrape.
    expect(await scrape()).toEqual(['ep_b']);
    attempted('ep_c', 'ep_a'); // ep_c takes the place; ep_a waits
    expect(await scrape()).toEqual(['ep_b', 'ep_c']);
    attempted('ep_c');
    expect(await value('ep_c')).toBe(1);
    expect(await value('ep_b')).toBe(1);
    expect(await value('other')).toBe(6);
  });

  it('frees as many places as endpoints waited, the longest idle first', async () => {
    const { clock, attempted, scrape } = attempts(3);
    attempted('ep_a');
    clock.advance(10 * 60_000);
    attempted('ep_b');
    clock.advance(20 * 60_000);
    attempted('ep_c');
    clock.advance(10 * 60_000);
    attempted('ep_a'); // the longest idle now ep_b, then ep_c
    await scrape();
    clock.advance(2 * IDLE_MS); // all three idle
    attempted('ep_d', 'ep_d'); // one endpoint waits, twice
    expect(await scrape()).toEqual(['ep_a', 'ep_c']);
    attempted('ep_d', 'ep_e', 'ep_f'); // ep_d takes the place; two wait
    expect(await scrape()).toEqual(['ep_d']);
  });

  it('keeps the place of an endpoint attempted since the last scrape, however long ago', async () => {
    const { clock, attempted, scrape, value } = attempts(1);
    attempted('ep_a');
    await scrape();
    clock.advance(30 * 60_000);
    attempted('ep_a');
    clock.advance(2 * IDLE_MS); // scrapes rarer than the hour
    attempted('ep_b');
    // Its series ending now would leave that attempt unscraped.
    expect(await scrape()).toEqual(['ep_a']);
    expect(await value('ep_a')).toBe(1);
    attempted('ep_b');
    expect(await scrape()).toEqual([]);
  });

  it('keeps the places of idle endpoints while no endpoint waits for one', async () => {
    const { clock, attempted, scrape } = attempts(2);
    attempted('ep_a');
    clock.advance(IDLE_MS * 24);
    expect(await scrape()).toEqual(['ep_a']);
    attempted('ep_b'); // a place was free: nothing waited
    clock.advance(IDLE_MS);
    expect(await scrape()).toEqual(['ep_a', 'ep_b']);
    attempted('ep_c'); // waits
    expect(await scrape()).toEqual(['ep_b']);
    // Having waited until that scrape only, it frees nothing more.
    attempted('ep_d');
    clock.advance(IDLE_MS);
    expect(await scrape()).toEqual(['ep_b', 'ep_d']);
  });

  it('counts an endpoint that waited and then found a place as waiting no more', async () => {
    const { clock, counted, attempted, scrape } = attempts(2);
    attempted('ep_a', 'ep_b');
    await scrape();
    attempted('ep_c'); // waits
    counted.forget(['ep_a']);
    attempted('ep_c'); // takes ep_a's place
    clock.advance(2 * IDLE_MS);
    await scrape();
    // No endpoint waits any more: ep_b, idle, keeps its place.
    expect(counted.named()).toEqual(['ep_b', 'ep_c']);
  });

  it("shows a deleted endpoint's series once more before removing it, with the attempts that reached it meanwhile", async () => {
    const { counted, attempted, scrape, value } = attempts(2);
    attempted('ep_a');
    await scrape(); // shown at 0
    attempted('ep_a');
    expect(await value('ep_a')).toBe(1);
    // Reached its series after that scrape read the values, before its read of the labels found it deleted.
    attempted('ep_a');
    counted.forget(['ep_a']);
    expect(counted.named()).toEqual([]);
    expect(await value('ep_a')).toBe(2);
    expect(await scrape()).toEqual([]);
  });

  it('keeps the series of a deleted endpoint named again before its removal, as in use', async () => {
    const { counted, attempted, scrape } = attempts(1);
    attempted('ep_a');
    await scrape();
    counted.forget(['ep_a']);
    attempted('ep_b'); // takes the place
    counted.forget(['ep_b']); // two deleted remembered for one place: ep_a let go
    attempted('ep_a'); // named again
    await scrape(); // both deleted series shown a last time
    expect(await scrape()).toEqual(['ep_a']);
    expect(counted.named()).toEqual(['ep_a']);
  });

  it("counts a deleted endpoint's late attempts under other, remembering as many deleted as it has places", async () => {
    const { clock, counted, attempted, scrape, value } = attempts(2);
    attempted('ep_a', 'ep_b');
    await scrape();
    counted.forget(['ep_a', 'ep_b', 'ep_unknown']);
    await scrape(); // their series shown once more
    expect(await scrape()).toEqual([]);
    attempted('ep_c', 'ep_d');
    await scrape();
    clock.advance(2 * IDLE_MS);
    // Attempts in flight as they were deleted: neither named again nor waiting for a place.
    attempted('ep_a');
    expect(await scrape()).toEqual(['ep_c', 'ep_d']);
    expect(await value('other')).toBe(5);
    counted.forget(['ep_c']); // three remembered deleted: ep_a, the oldest, is let go
    attempted('ep_a', 'ep_b');
    expect(await scrape()).toEqual(['ep_a', 'ep_c', 'ep_d']); // ep_c's shown a last time
    expect(await scrape()).toEqual(['ep_a', 'ep_d']);
    expect(await value('other')).toBe(7);
  });
});
