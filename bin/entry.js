// Which CLI entry to run: the compiled one (dist/, `npm run build`) when its build is at least as
// new as every file under src/, else the TypeScript sources through tsx's loader. A stale dist/
// (sources edited after the build) is never run.
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

/** Written by scripts/build.ts once dist/ is complete. */
export const BUILD_STAMP = 'dist/.built';

function newestMtimeMs(dir) {
  let newest = 0;
  for (const name of readdirSync(dir, { recursive: true })) {
    newest = Math.max(newest, statSync(join(dir, name)).mtimeMs);
  }
  return newest;
}

/** @returns {{ compiled: boolean, path: string }} */
export function cliEntry(root) {
  const stamp = join(root, BUILD_STAMP);
  const compiled = existsSync(stamp) && statSync(stamp).mtimeMs >= newestMtimeMs(join(root, 'src'));
  return { compiled, path: join(root, compiled ? 'dist/cli/main.js' : 'src/cli/main.ts') };
}
