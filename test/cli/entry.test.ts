import { mkdtempSync, rmSync, utimesSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { cliEntry } from '../../bin/entry.js';
import { touch } from '../support/files.ts';

let root: string;

beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), 'courier-entry-'));
  touch(join(root, 'src/cli/main.ts'), 1_000);
  touch(join(root, 'src/store/migrations/0001_schema.sql'), 1_000);
  // Directories count too (a file removed from src/ changes only its directory's time).
  for (const dir of ['src', 'src/cli', 'src/store', 'src/store/migrations'])
    utimesSync(join(root, dir), 1_000, 1_000);
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

describe('the CLI entry bin/courier.js runs', () => {
  it('the TypeScript sources when nothing was built', () => {
    expect(cliEntry(root)).toEqual({ compiled: false, path: join(root, 'src/cli/main.ts') });
  });

  it('the compiled CLI when its build is as new as every source file', () => {
    touch(join(root, 'dist/cli/main.js'), 2_000);
    touch(join(root, 'dist/.built'), 2_000);
    expect(cliEntry(root)).toEqual({ compiled: true, path: join(root, 'dist/cli/main.js') });
  });

  it('the sources again once any of them, however deep, is newer than the build', () => {
    touch(join(root, 'dist/cli/main.js'), 2_000);
    touch(join(root, 'dist/.built'), 2_000);
    touch(join(root, 'src/store/migrations/0002_more.sql'), 3_000);
    expect(cliEntry(root).compiled).toBe(false);
  });

  it('the sources once a file was removed from them after the build', () => {
    touch(join(root, 'dist/.built'), 2_000);
    utimesSync(join(root, 'src/cli'), 3_000, 3_000);
    expect(cliEntry(root).compiled).toBe(false);
  });

  it('the sources when a build was interrupted before its stamp', () => {
    touch(join(root, 'dist/cli/main.js'), 2_000);
    expect(cliEntry(root).compiled).toBe(false);
  });
});
