/**
 * `npm run chaos`: Courier under faults, checked end to end. Bounded (about 10 minutes at most) and
 * stops by itself; exits 1 on any violation.
 *
 *   npm run chaos -- [--messages N] [--endpoints N] [--minutes M] [--seed S] [--smoke] [--no-pg-restart]
 */
import { parseArgs } from 'node:util';
import { type ChaosOptions, runChaos } from './chaos.ts';

const { values } = parseArgs({
  options: {
    messages: { type: 'string' },
    endpoints: { type: 'string' },
    minutes: { type: 'string' },
    seed: { type: 'string' },
    smoke: { type: 'boolean', default: false },
    'no-pg-restart': { type: 'boolean', default: false },
    'no-api-restart': { type: 'boolean', default: false },
  },
});

function number(name: string, value: string | undefined, fallback: number, min: number, max: number): number {
  if (value === undefined) return fallback;
  const parsed = Number(value);
  if (!Number.isFinite(parsed) || parsed < min || parsed > max) {
    process.stderr.write(`chaos: --${name} must be a number from ${min} to ${max}\n`);
    process.exit(2);
  }
  return parsed;
}

const smoke = values.smoke;
const minutes = number('minutes', values.minutes, smoke ? 0.25 : 3, 0.1, 6);
const options: ChaosOptions = {
  messages: Math.round(number('messages', values.messages, smoke ? 300 : 20_000, 1, 200_000)),
  endpoints: Math.round(number('endpoints', values.endpoints, smoke ? 8 : 64, 1, 2_000)),
  publishSeconds: minutes * 60,
  workers: 3,
  receivers: smoke ? 1 : 2,
  maxKills: smoke ? 1 : 1_000,
  killEveryMs: smoke ? [3_000, 5_000] : [3_000, 6_000],
  pgRestart: !smoke && !values['no-pg-restart'],
  apiRestart: !smoke && !values['no-api-restart'],
  // The whole run stays within about 10 minutes: start-up, publishing, then this at most.
  drainSeconds: smoke ? 60 : Math.max(60, 540 - minutes * 60),
  seed: Math.round(number('seed', values.seed, Date.now() % 1_000_000, 0, 2 ** 31)),
  databaseUrl: process.env.COURIER_CHAOS_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test',
  command: `npm run chaos -- ${process.argv.slice(2).join(' ')}`.trim(),
  log: (line) => process.stdout.write(`[chaos ${new Date().toISOString().slice(11, 19)}] ${line}\n`),
};

const result = await runChaos(options);
process.stdout.write(`\n${result.table}\n`);
if (!result.ok) {
  process.stdout.write(`\n${result.violations.length} violation(s):\n`);
  for (const v of result.violations.slice(0, 50)) process.stdout.write(`  - ${v}\n`);
  if (result.violations.length > 50) process.stdout.write(`  … and ${result.violations.length - 50} more\n`);
}
process.stdout.write(`\nseed ${options.seed}: ${result.ok ? 'PASS' : 'FAIL'}\n`);
process.exit(result.ok ? 0 : 1);
