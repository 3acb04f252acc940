/**
 * `npm run build`: compiles src/ to dist/ as plain JavaScript, with the SQL migrations beside it,
 * so production processes run without tsx's loader (about 25 MiB per process). bin/courier.js
 * runs dist/ when its stamp is at least as new as every file under src/, else src/ through tsx.
 */
import { execFileSync } from 'node:child_process';
import { cpSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { BUILD_STAMP } from '../bin/entry.js';

const root = fileURLToPath(new URL('..', import.meta.url));

export function buildDist(): void {
  const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
  rmSync(`${root}dist`, { recursive: true, force: true });
  execFileSync(process.execPath, [tsc, '-p', `${root}tsconfig.build.json`], { stdio: 'inherit' });
  cpSync(`${root}src/store/migrations`, `${root}dist/store/migrations`, { recursive: true });
  // Last, so an interrupted build leaves no stamp and bin/courier.js keeps running the sources.
  writeFileSync(`${root}${BUILD_STAMP}`, `${new Date().toISOString()}\n`);
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) buildDist();
