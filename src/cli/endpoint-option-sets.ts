/**
 * The option sets the commands of application and operational endpoints share: `headers`,
 * `rotate-secret` and `--metadata` (resource-commands.ts and operational-commands.ts use them).
 */
import { type Command, Option } from 'commander';
import { SECRET_GRACE_MAX_S } from '../setting-limits.ts';
import { durationWithin } from './input.ts';
import { collectHeader, collectHeaderName, signingSecret } from './resource-input.ts';

export const METADATA =
  'a KEY=VALUE pair of your own (the key without =), kept with it and shown by --json (repeatable)';

/** `headers`, of application and operational endpoints alike. */
export function headerChanges(command: Command): Command {
  return command
    .description('print the headers its deliveries carry, after adding, replacing or removing some')
    .option(
      '--header <header>',
      "'Name: value' to add, or to replace the value of (repeatable); @FILE reads such lines from a file, @- from standard input",
      collectHeader,
    )
    .option('--remove <name>', 'remove this header (repeatable)', collectHeaderName)
    .addOption(
      new Option(
        '--clear',
        'remove every header first, credentials too (said on stderr): the endpoint keeps only those --header gives',
      ).conflicts('remove'),
    );
}

/** `rotate-secret`, of application and operational endpoints alike. */
export function rotation(command: Command): Command {
  return command
    .description(
      'sign with a new secret, and print it if made here; the previous one signs beside it for a while',
    )
    .option(
      '--secret <secret>',
      'the new secret (whsec_…; - reads it from standard input, out of ps, typed unseen at a terminal); default: a new one',
      signingSecret,
    )
    .option(
      '--grace-period <duration>',
      'how long the previous secret signs beside it, such as 90m, 2h or 7d; 0 for not at all (default: 1d)',
      durationWithin(0, SECRET_GRACE_MAX_S),
    );
}
