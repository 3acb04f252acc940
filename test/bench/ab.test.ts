import { describe, expect, it } from 'vitest';
import { parseVariant, runAb } from '../../bench/ab.ts';

describe('parseVariant', () => {
  it('reads a name, environment, node flags and another CLI', () => {
    expect(
      parseVariant(
        'old|COURIER_BATCH_SIZE=100,X_Y=a=b|--trace-gc --max-old-space-size=256|/tmp/old/bin/courier.js',
      ),
    ).toEqual({
      name: 'old',
      env: { COURIER_BATCH_SIZE: '100', X_Y: 'a=b' },
      nodeFlags: ['--trace-gc', '--max-old-space-size=256'],
      cli: '/tmp/old/bin/courier.js',
    });
    expect(parseVariant('base')).toEqual({ name: 'base', env: {}, nodeFlags: [], cli: undefined });
  });

  it('says which part of a variant is wrong', () => {
    expect(() => parseVariant('')).toThrow(/the name must be/);
    expect(() => parseVariant('a b')).toThrow(/the name must be/);
    expect(() => parseVariant('x|lower=1')).toThrow(/"lower=1" is not NAME=value/);
    expect(() => parseVariant('x|NOVALUE')).toThrow(/"NOVALUE" is not NAME=value/);
  });
});

// A tiny A/B run so the tool does not rot; its figures are not judged here.
describe('bench:ab smoke run', () => {
  it('drains once per variant and reads the traced collector', { timeout: 120_000 }, async () => {
    const lines: string[] = [];
    const drains = await runAb([parseVariant('base'), parseVariant('gc||--trace-gc')], {
      messages: 200,
      rounds: 1,
      log: (line) => lines.push(line),
    });
    expect(drains.map((d) => d.variant)).toEqual(['base', 'gc']);
    for (const d of drains) expect(d.deliveriesPerSec).toBeGreaterThan(0);
    expect(drains[0]!.gc).toBeNull();
    expect(drains[1]!.gc!.scavenges).toBeGreaterThan(0);
    expect(lines.at(-1)).toMatch(/^median gc: \d+\/s/);
  });

  it('with a latency load, publishes at that rate and reports p50 and p99', {
    timeout: 120_000,
  }, async () => {
    const lines: string[] = [];
    const [run] = await runAb([parseVariant('base')], {
      messages: 2,
      rounds: 1,
      latency: { ratePerSec: 100, seconds: 2 },
      log: (line) => lines.push(line),
    });
    expect(run!.latency!.p50Ms).toBeGreaterThan(0);
    expect(run!.latency!.p99Ms).toBeGreaterThanOrEqual(run!.latency!.p50Ms);
    expect(run!.deliveriesPerSec).toBeGreaterThan(50);
    expect(lines.at(-1)).toMatch(/^median base: p50 [\d.]+ ms, p99 [\d.]+ ms at \d+\/s, µs per message/);
  });

  it('with --api, POSTs the messages to courier serve and reports both rates and its CPU', {
    timeout: 120_000,
  }, async () => {
    const lines: string[] = [];
    const [run] = await runAb([parseVariant('base')], {
      messages: 200,
      rounds: 1,
      api: true,
      log: (line) => lines.push(line),
    });
    expect(run!.publishPerSec).toBeGreaterThan(0);
    expect(run!.deliveriesPerSec).toBeGreaterThan(0);
    expect(lines.at(-1)).toMatch(
      /^median base: publish \d+\/s, delivered \d+\/s(, µs per message: courier serve \d+|$)/,
    );
  });

  it("stops at once, with the worker's own words, when a variant's worker cannot start", async () => {
    const started = Date.now();
    await expect(
      runAb([parseVariant('bad||--no-such-node-flag')], { messages: 20, rounds: 1, log: () => {} }),
    ).rejects.toThrow(/exited before it started:[\s\S]*--no-such-node-flag/);
    expect(Date.now() - started).toBeLessThan(30_000);
  });
});
