/** Writes the configuration table into README.md from src/config-options.ts (npm run docs:config). */
import { readFileSync, writeFileSync } from 'node:fs';
import { configTable } from '../src/config-options.ts';

const README = new URL('../README.md', import.meta.url);
const START = '<!-- config-table:start -->';
const END = '<!-- config-table:end -->';

export function withConfigTable(readme: string): string {
  const from = readme.indexOf(START);
  const to = readme.indexOf(END);
  if (from < 0 || to < from) throw new Error('README.md lacks the config-table markers');
  return `${readme.slice(0, from + START.length)}\n${configTable()}\n${readme.slice(to)}`;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  writeFileSync(README, withConfigTable(readFileSync(README, 'utf8')));
}
