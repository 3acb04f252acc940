import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { nominalDelay } from '../../src/policy/backoff.ts';
import { DEFAULT_POLICY, definePolicy } from '../../src/policy/defaults.ts';
import { formatDuration } from '../../src/policy/duration.ts';
import type { RetryPolicy } from '../../src/policy/types.ts';

// docs/retry-policy.md shows schedules as tables; they must say what the implementation does.
const doc = readFileSync(new URL('../../docs/retry-policy.md', import.meta.url), 'utf8');

function between(marker: string): string[] {
  const start = doc.indexOf(`<!-- ${marker}:start -->`);
  const end = doc.indexOf(`<!-- ${marker}:end -->`);
  expect(start).toBeGreaterThanOrEqual(0);
  expect(end).toBeGreaterThan(start);
  return doc.slice(start, end).split('\n').slice(1, -1);
}

function scheduleTable(policy: RetryPolicy): string[] {
  const rows = [
    '| Attempt | Wait before it (nominal) | Equal-jitter range | Cumulative nominal time |',
    '|---:|---:|---:|---:|',
    '| 1 | immediate | — | 0s |',
  ];
  let cumulative = 0;
  for (let n = 1; n < policy.giveUp.maxAttempts; n++) {
    const wait = nominalDelay(n, policy.backoff);
    cumulative += wait;
    const range = `${formatDuration(Math.ceil(wait / 2))}–${formatDuration(wait)}`;
    rows.push(`| ${n + 1} | ${formatDuration(wait)} | ${range} | ${formatDuration(cumulative)} |`);
  }
  return rows;
}

describe('docs/retry-policy.md', () => {
  it('shows the default schedule', () => {
    expect(between('default-schedule')).toEqual(scheduleTable(DEFAULT_POLICY));
  });

  it('shows the schedule its Svix-like example policy produces', () => {
    const snippet = doc.slice(doc.indexOf('<!-- svix-schedule-policy -->'));
    const scheduleMs = JSON.parse(
      /scheduleMs: (\[[\d_, ]+\])/.exec(snippet)![1]!.replaceAll('_', ''),
    ) as number[];
    const maxAttempts = Number(/maxAttempts: (\d+)/.exec(snippet)![1]);
    expect(scheduleMs).toEqual([5, 300, 1_800, 7_200, 18_000, 36_000, 36_000].map((s) => s * 1000));
    const policy = definePolicy({ backoff: { scheduleMs }, giveUp: { maxAttempts } });
    expect(between('svix-schedule')).toEqual(scheduleTable(policy));
  });
});
