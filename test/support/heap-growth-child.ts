/**
 * Promotes garbage steadily (a sliding window of objects old enough to reach the old generation)
 * and prints the largest heap V8 reserved, optionally after limitHeapGrowth (argv: "limit").
 */
import { limitHeapGrowth } from '../../src/cli/heap-growth.ts';

if (process.argv[2] === 'limit') limitHeapGrowth();
const window: { i: number; s: string }[] = new Array(100_000);
let peak = 0;
for (let i = 0; i < 2_000_000; i++) {
  window[i % window.length] = { i, s: `${'x'.repeat(200)}${i}` };
  if (i % 1_000 === 0) peak = Math.max(peak, process.memoryUsage().heapTotal);
}
process.stdout.write(`${peak}\n`);
