import { mkdirSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** An empty file (and its directories) last modified at `atSec`, as a build or an edit leaves it. */
export function touch(path: string, atSec: number): void {
  mkdirSync(join(path, '..'), { recursive: true });
  writeFileSync(path, '');
  utimesSync(path, atSec, atSec);
}
