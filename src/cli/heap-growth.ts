import { setFlagsFromString } from 'node:v8';

const FLAG = '--heap-growing-percent';

/**
 * Lets V8's old generation grow to at most twice what survived its last full collection before
 * collecting again, instead of up to four times on a machine with much memory. `courier serve`
 * takes in request bodies and hands out deliveries at once, and the garbage of both, promoted
 * while in flight, stays until the next full collection: with V8's own factor its peak RSS under
 * a POST flood reached 182–204 MiB (the bench's API run), 151–155 with this. It costs a draining
 * worker about an eighth more CPU per delivery (more full collections, which promote more), so
 * `courier worker`, the process that drains at full speed, keeps V8's factor.
 * A `--heap-growing-percent` given to node itself is left as it is.
 */
export function limitHeapGrowth(percent = 100): void {
  if (process.execArgv.some((arg) => arg === FLAG || arg.startsWith(`${FLAG}=`))) return;
  // Read at each full collection, so it applies from the next one on.
  setFlagsFromString(`${FLAG}=${percent}`);
}
