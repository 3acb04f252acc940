import { getHeapStatistics, setFlagsFromString } from 'node:v8';

/** The heap limit from which V8 lets the old generation grow up to four times between collections. */
const LARGE_HEAP_LIMIT = 2 * 1024 ** 3;

/**
 * Lets V8's old generation grow to about twice what survived its last full collection before
 * collecting again, instead of up to four times, V8's factor when the heap limit is large (as on
 * a machine with much memory). `courier serve` takes in request bodies and hands out deliveries
 * at once, and the garbage of both, promoted while in flight, stays until the next full
 * collection: with V8's factor its peak RSS under a POST flood reached 175–204 MiB (the bench's
 * API run), 146–149 with this. It costs a draining worker about an eighth more CPU per delivery
 * (more full collections, which promote more), so `courier worker`, the process that drains at
 * full speed, keeps V8's factor.
 *
 * The flag replaces V8's factor rather than capping it: with a smaller heap limit (a small machine,
 * or --max-old-space-size) V8's own is 2 or less, and it is left alone; and an idle process, which
 * V8 would shrink further, keeps up to twice its live heap. A --heap-growing-percent given to node
 * itself is left as it is.
 */
export function limitHeapGrowth(percent = 100): void {
  if (!heapGrowthToLimit(process.execArgv, getHeapStatistics().heap_size_limit)) return;
  // Read at each full collection, so it applies from the next one on.
  setFlagsFromString(`--heap-growing-percent=${percent}`);
}

/** Whether limitHeapGrowth sets the flag, given node's own arguments and V8's heap limit. */
export function heapGrowthToLimit(execArgv: readonly string[], heapSizeLimit: number): boolean {
  const given = execArgv.some((arg) => /^--heap[-_]growing[-_]percent(=|$)/.test(arg));
  return !given && heapSizeLimit >= LARGE_HEAP_LIMIT;
}
