/**
 * `npm run build`: compiles src/ to dist/ as plain JavaScript, with the SQL migrations beside it,
 * so production processes run without tsx's loader (about 25 MiB per process). bin/courier.js
 * runs dist/ when its stamp is at least as new as every file under src/, else src/ through tsx.
 */
import { execFileSync } from 'node:child_process';
import { cpSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { BUILD_STAMP } from '../bin/entry.js';

const root = fileURLToPath(new URL('..', import.meta.url));

export function buildDist(): void {
  const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
  const started = new Date();
  rmSync(`${root}dist`, { recursive: true, force: true });
  execFileSync(process.execPath, [tsc, '-p', `${root}tsconfig.build.json`], { stdio: 'inherit' });
  cpSync(`${root}src/store/migrations`, `${root}dist/store/migrations`, { recursive: true });
  // Last, so an interrupted build leaves no stamp and bin/courier.js keeps running the sources.
  writeFileSync(`${root}${BUILD_STAMP}`, `${started.toISOString()}\n`);
  // Dated when the compiler began reading: a source edited during the build is newer, so
  // bin/courier.js runs the sources rather than a dist/ that lacks the edit.
  utimesSync(`${root}${BUILD_STAMP}`, started, started);
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) buildDist();
