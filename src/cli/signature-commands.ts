/**
 * `courier verify` and `courier sign` (main.ts adds them to the program; the actions load lazily).
 * Offline: they read secrets, headers and bodies, never the API.
 */
import type { Command } from 'commander';
import { formatDuration } from '../policy/duration.ts';
import { DEFAULT_TOLERANCE_SEC } from '../signing/verification.ts';
import type { SignOptions, VerifyOptions } from './commands/signature.ts';
import { durationWithin } from './input.ts';
import {
  collectReceivedHeader,
  collectSecret,
  instant,
  SECRET_VARIABLE,
  unixSeconds,
  webhookBody,
  webhookId,
} from './webhook-input.ts';

const BODY = [
  '<body>',
  'the raw body: inline, @FILE, or - for standard input (its bytes exactly: a re-serialized JSON body will not match)',
  webhookBody,
] as const;
const SECRET = [
  '--secret <secret>',
  `the endpoint's secret, whsec_… (repeatable: both during a rotation; - reads them from standard input, typed unseen at a terminal; default: ${SECRET_VARIABLE})`,
  collectSecret,
] as const;

export function signatureCommands(program: Command): void {
  program
    .command('verify')
    .description("check a webhook's signature and timestamp against the endpoint's secret (offline)")
    .argument(...BODY)
    .option(...SECRET)
    .requiredOption(
      '-H, --header <header>',
      "a header as received, 'Name: value' (repeatable), or @FILE / @- holding a request's head or a JSON object of headers",
      collectReceivedHeader,
    )
    .option(
      '--at <time>',
      'check the timestamp against this time (Unix seconds or ISO 8601), not now',
      instant,
    )
    .option(
      '--tolerance <duration>',
      `how far the timestamp may be from the time (default ${formatDuration(DEFAULT_TOLERANCE_SEC * 1000)}, as receivers allow)`,
      durationWithin(0, 30 * 86_400),
    )
    .option('--json', 'print the findings as JSON')
    .addHelpText(
      'after',
      `
The headers are webhook-id, webhook-timestamp and webhook-signature (svix-*
too). Exit status: 0 verified, 1 not verified (why, on stderr, with a hint when
the body matches once a final newline, a byte order mark or CRLF line ends are
undone, or a lost final newline put back), 2 usage error, 130 Ctrl-C at the
--secret - prompt.

Examples:
  $ export COURIER_WEBHOOK_SECRET=$(courier endpoints secret acme main)
  $ courier verify @body.json --header @headers.txt
  $ courier verify @body.json -H 'webhook-id: msg_2b…' -H 'webhook-timestamp: 1767225600' \\
      -H 'webhook-signature: v1,K5oZ…' --at 1767225600`,
    )
    .action(async (body: Buffer, options: VerifyOptions) =>
      (await import('./commands/signature.ts')).verifyWebhook(body, options),
    );

  program
    .command('sign')
    .description('sign a body as Courier would, to test a receiver (offline)')
    .argument(...BODY)
    .option(...SECRET)
    .option('--id <msg-id>', 'the webhook-id (default: a new msg_… id)', webhookId)
    .option('--timestamp <seconds>', 'the webhook-timestamp, Unix seconds (default: now)', unixSeconds)
    .option('--json', 'print the headers as a JSON object')
    .addHelpText(
      'after',
      `
Prints the webhook-id, webhook-timestamp and webhook-signature headers, one
'Name: value' line each (a signature per secret), as curl's -H @- reads them.

Example:
  $ courier sign @body.json | curl -H @- -H 'content-type: application/json' \\
      --data-binary @body.json http://localhost:3000/webhooks`,
    )
    .action(async (body: Buffer, options: SignOptions) =>
      (await import('./commands/signature.ts')).signWebhook(body, options),
    );
}
