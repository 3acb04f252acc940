import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { getHeapStatistics } from 'node:v8';
import { describe, expect, it } from 'vitest';
import { heapGrowthToLimit } from '../../src/cli/heap-growth.ts';

const CHILD = fileURLToPath(new URL('../support/heap-growth-child.ts', import.meta.url));

const peakHeap = (...args: string[]) =>
  Number(execFileSync(process.execPath, ['--import', 'tsx', CHILD, ...args], { encoding: 'utf8' }));

// Only where V8's heap limit is large (2 GiB or more, as on a machine with much memory), where
// V8's own factor is up to four and limitHeapGrowth applies.
describe.skipIf(getHeapStatistics().heap_size_limit < 2 * 1024 ** 3)(
  'limitHeapGrowth (courier serve)',
  () => {
    it('keeps the heap well below what V8 lets it grow to by itself', () => {
      // About 203 against 131 MB on the machine this was written on: the 35 MB of live objects
      // are the same; what differs is how much garbage V8 lets pile up before collecting it.
      const own = peakHeap();
      const limited = peakHeap('limit');
      expect(limited).toBeLessThan(own * 0.85);
    }, 60_000);

    it('leaves alone a --heap-growing-percent given to node', () => {
      const explicit = Number(
        execFileSync(process.execPath, ['--heap-growing-percent=300', '--import', 'tsx', CHILD, 'limit'], {
          encoding: 'utf8',
        }),
      );
      expect(explicit).toBeGreaterThan(peakHeap('limit') * 1.15);
    }, 60_000);
  },
);

describe('heapGrowthToLimit', () => {
  const GiB = 1024 ** 3;
  it('applies only where V8 would let the heap grow more, and no flag was given', () => {
    expect(heapGrowthToLimit([], 4 * GiB)).toBe(true);
    expect(heapGrowthToLimit(['--import', 'tsx'], 2 * GiB)).toBe(true);
    // A small machine or --max-old-space-size: V8's own factor is 2 or less already.
    expect(heapGrowthToLimit([], 2 * GiB - 1)).toBe(false);
    expect(heapGrowthToLimit(['--heap-growing-percent=300'], 4 * GiB)).toBe(false);
    expect(heapGrowthToLimit(['--heap_growing_percent=50'], 4 * GiB)).toBe(false);
    expect(heapGrowthToLimit(['--heap-growing-percent'], 4 * GiB)).toBe(false);
    expect(heapGrowthToLimit(['--heap-growing-percentage=5'], 4 * GiB)).toBe(true);
  });
});
