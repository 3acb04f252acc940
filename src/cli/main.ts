import { Command, Option } from 'commander';
import { MAX_EXPIRY_S, MIN_EXPIRY_S } from '../api/app-capabilities.ts';
import { PAYLOAD_RETENTION_HOURS } from '../message-limits.ts';
import type { OperatorOptions } from './api-client.ts';
import type { CreateOptions, ExpireOptions } from './commands/app-tokens.ts';
import type { AttemptsOptions } from './commands/attempts.ts';
import type { DlqOptions, ReplayOptions } from './commands/dlq.ts';
import type { ImportOptions } from './commands/event-types.ts';
import type { MessagesOptions } from './commands/messages.ts';
import type { BulkReplayOptions, ReplayMissingOptions } from './commands/replay.ts';
import type { SendOptions } from './commands/send.ts';
import type { UsageOptions } from './commands/usage.ts';
import { CliError } from './errors.ts';
import { printable } from './format.ts';
import {
  collect,
  collectCapability,
  collectChannel,
  collectTag,
  durationWithin,
  eventTypeName,
  idempotencyKey,
  positiveInteger,
  STATUS_CODE_CLASSES,
  wholeHoursWithin,
} from './input.ts';
import { operationalEndpointCommands } from './operational-commands.ts';
import {
  APP,
  ENDPOINT,
  messageFilters,
  operator,
  publishRange,
  standingOption,
  timeRange,
} from './options.ts';
import { applicationCommands, endpointCommands } from './resource-commands.ts';
import { signatureCommands } from './signature-commands.ts';

// Commands load their modules lazily: `courier worker` never pays for the HTTP server, nor the other way round.
const program = new Command()
  .name('courier')
  .description('Courier: self-hosted webhook delivery')
  .showHelpAfterError('(add --help for usage)')
  // `send <app> <event-type> <payload>`: without `[options]`, the command list fits 80 columns.
  .configureHelp({
    subcommandTerm: (cmd) => `${cmd.name()} ${cmd.usage().replace(/\[options\] ?/, '')}`.trim(),
  })
  // Usage errors exit 2 (commander's default is 1), so scripts can tell them from API failures.
  .exitOverride((error) => process.exit(error.exitCode === 0 ? 0 : 2))
  .addHelpText(
    'after',
    `
apps, endpoints, send, messages, attempts, status, dlq, replay-missing,
bulk-replay, event-types, usage, operational-endpoints and app-tokens talk to a
running Courier over its API:
  COURIER_URL     its base URL, or --url (default: where COURIER_HOST and COURIER_PORT put it)
  COURIER_TOKEN   an API token, or --token (default: COURIER_ADMIN_TOKEN)
They print tables, or JSON with --json. Exit status: 0 done, 1 API or network
error (or a deletion not confirmed), 2 usage error (nothing was sent), 130
Ctrl-C at a prompt. verify and sign work offline, with an endpoint's secret:
verify exits 1 when a webhook does not verify.

Examples:
  $ courier apps create "Acme Corp" --uid acme
  $ courier endpoints add acme https://acme.example.com/webhooks --uid main
  $ courier send acme invoice.paid '{"invoice":42}' --event-id inv-42
  $ courier messages acme --event-type invoice.paid --limit 10
  $ courier attempts acme main --limit 10
  $ courier status acme inv-42
  $ courier dlq replay acme main --since 2026-01-31
  $ courier endpoints secret acme main | courier verify @body.json -H @headers.txt --secret -`,
  );

program
  .command('serve', { isDefault: true })
  .description('run the API and the delivery workers in one process')
  // Being the default, serve also receives mistyped commands (`courier endpoint acme`): say so.
  .allowExcessArguments()
  .action(async (_options: unknown, command: Command) => {
    if (command.args.length > 0) program.error(`error: unknown command '${command.args[0]}'`);
    await (await import('./commands/serve.ts')).serve();
  });

program
  .command('worker')
  .description('run delivery workers only (scale out against one PostgreSQL)')
  .action(async () => (await import('./commands/worker.ts')).worker());

program
  .command('migrate')
  .description('apply pending database migrations and exit')
  .action(async () => (await import('./commands/migrate.ts')).migrate());

applicationCommands(program);
endpointCommands(program);

operator(
  program
    .command('send')
    .description('publish a message to an application')
    .argument(...APP)
    .argument('<event-type>', 'event type name, e.g. invoice.paid', eventTypeName)
    .argument('<payload>', "JSON object: inline '{…}', @file to read a file, or - for standard input")
    .option('--event-id <id>', 'your id for this event: a second message with it is refused')
    .option('--channel <channel>', 'deliver only to endpoints on this channel (repeatable)', collectChannel)
    .option('--tag <tag>', 'a tag to find the message by later (repeatable)', collectTag)
    .option(
      '--payload-retention <duration>',
      'delete the payload this long after publishing (whole hours, 1h to 90d); without it, the payload is kept as long as the message',
      wholeHoursWithin(PAYLOAD_RETENTION_HOURS.min, PAYLOAD_RETENTION_HOURS.max),
    )
    .option(
      '--idempotency-key <key>',
      'your key for this send (1-256 printable ASCII characters): repeated with it within 24 hours (after a lost answer), it publishes once and answers with the first message',
      idempotencyKey,
    ),
).action(async (app: string, eventType: string, payload: string, options: SendOptions) =>
  (await import('./commands/send.ts')).send(app, eventType, payload, options),
);

operator(
  program
    .command('attempts')
    .description("show an endpoint's latest attempts")
    .argument(...APP)
    .argument(...ENDPOINT)
    .option('--limit <n>', 'how many attempts to show', positiveInteger, 50)
    .option('--msg <message>', 'only the attempts of this message (id or eventId)'),
).action(async (app: string, endpoint: string, options: AttemptsOptions) =>
  (await import('./commands/attempts.ts')).attempts(app, endpoint, options),
);

operator(
  program
    .command('status')
    .description('show where a message stands at each of its endpoints')
    .argument(...APP)
    .argument('<message>', 'message id (msg_…) or eventId'),
).action(async (app: string, message: string, options: OperatorOptions) =>
  (await import('./commands/status.ts')).status(app, message, options),
);

operator(
  timeRange(
    messageFilters(
      program
        .command('messages')
        .description("list an application's latest messages, each with where it stands at its endpoints")
        .argument(...APP)
        .option('--limit <n>', 'how many messages to show, newest first', positiveInteger, 50)
        .option(
          '--endpoint <endpoint>',
          'only the messages sent to this endpoint (id or uid), each with where it stands there',
        )
        .addOption(
          standingOption(
            'only messages standing so at one of their endpoints at least, or with --endpoint there (pending: retrying too)',
          ),
        ),
    ),
    'messages published',
  ),
).action(async (app: string, options: MessagesOptions) =>
  (await import('./commands/messages.ts')).messages(app, options),
);

operator(
  publishRange(
    program
      .command('replay-missing')
      .description(
        'send an endpoint the messages it never had a delivery of (published while it was disabled)',
      )
      .argument(...APP)
      .argument(...ENDPOINT),
  ).addHelpText(
    'after',
    `
Messages the endpoint takes (its event types and channels as they now are)
that it never had a delivery of are scheduled now, as manual attempts; those
it got, or has a delivery of (waiting, held or dead), are not sent again.
While the endpoint is paused or disabled they are held until it is resumed.

Example:
  $ courier replay-missing acme main --since 2026-01-31T00:00:00Z`,
  ),
).action(async (app: string, endpoint: string, options: ReplayMissingOptions) =>
  (await import('./commands/replay.ts')).replayMissing(app, endpoint, options),
);

operator(
  messageFilters(
    publishRange(
      program
        .command('bulk-replay')
        .description('send an endpoint again the messages it had, chosen by filters')
        .argument(...APP)
        .argument(...ENDPOINT),
    )
      .addOption(standingOption('only messages standing so at the endpoint (pending: retrying too)'))
      .addOption(
        new Option(
          '--status-code-class <class>',
          "only messages whose latest attempt's response status is in this class (0: no response)",
        ).choices(STATUS_CODE_CLASSES),
      ),
  ).addHelpText(
    'after',
    `
Each message chosen is sent again now, as a manual attempt with the same id and
bytes, as \`courier dlq replay\` does a dead letter; held while the endpoint is
paused or disabled. A message chosen as pending, failed or sending that was
delivered meanwhile is not sent again. Running the command twice sends twice.

Examples:
  $ courier bulk-replay acme main --since 2026-01-31 --status failed
  $ courier bulk-replay acme main --since 2026-01-31T08:00:00Z --until 2026-01-31T09:00:00Z \\
      --event-type invoice.paid --status-code-class 500`,
  ),
).action(async (app: string, endpoint: string, options: BulkReplayOptions) =>
  (await import('./commands/replay.ts')).bulkReplay(app, endpoint, options),
);

const eventTypes = program.command('event-types').description('manage event types');

operator(
  eventTypes
    .command('import')
    .description("create or update event types from an OpenAPI document's webhooks")
    .argument('<file>', 'the OpenAPI document, YAML or JSON (- for standard input)')
    .option('--dry-run', 'say what would change, and change nothing')
    .option('--replace-all', 'also archive the event types the document does not name')
    .addHelpText(
      'after',
      `
Each webhook of the document (webhooks, or x-webhooks) becomes an event type
named by its key, described by its operation, with its JSON request body's
schema as version "1" and the body's examples as the schema's examples (which
send-example sends), and its x-svix-feature-flags, else x-svix-feature-flag,
as its feature flags (a webhook without them has none). All of it, or nothing.

Example:
  $ courier event-types import openapi.yaml --dry-run`,
    ),
).action(async (file: string, options: ImportOptions) =>
  (await import('./commands/event-types.ts')).importEventTypes(file, options),
);

const usage = program.command('usage').description('usage statistics: message destinations, subscriptions');

operator(
  publishRange(
    usage
      .command('apps')
      .description('message destinations per application, of the messages published in a time window'),
  )
    .option(
      '--app <app>',
      'this application only, id or uid (repeatable; default: every one with usage)',
      collect,
    )
    .addHelpText(
      'after',
      `
A message destination is a message and an endpoint it was sent to (or is to be),
counted once however many attempts it took. The window ends at --until, or now,
and spans 31 days at most. Counts cover what is retained (COURIER_RETENTION).
An --app that names no application is reported on stderr, with exit status 1,
after the others are printed.

Example:
  $ courier usage apps --since 2026-01-01 --until 2026-02-01`,
    ),
).action(async (options: UsageOptions) => (await import('./commands/usage.ts')).appUsage(options));

operator(
  usage.command('event-types').description("the event types each application's endpoints subscribe to"),
).action(async (options: OperatorOptions) => (await import('./commands/usage.ts')).eventTypeUsage(options));

operationalEndpointCommands(program);

const appTokens = program
  .command('app-tokens')
  .description("make and expire tokens that open one application's part of the API")
  .addHelpText(
    'after',
    `
A token opens its application alone (its endpoints, messages, attempts and the
event types, those with feature flags only through --feature-flag) as its
capabilities allow: hand it to the application's owner.
It is shown once; Courier keeps only its hash.

Examples:
  $ courier app-tokens create acme --read-only --expiry 1d
  $ courier app-tokens create acme --capability ViewBase,CreateAttempts --session s-42
  $ courier app-tokens create acme --feature-flag beta
  $ courier app-tokens expire acme --session s-42`,
  );

operator(
  appTokens
    .command('create')
    .description('make a token for an application and print it with its link')
    .argument(...APP)
    .option(
      '--capability <name>',
      'ViewBase (required), ViewEndpointSecret, ManageEndpointSecret, CreateAttempts, ManageEndpoint, ManageTransformations (repeatable; default: all)',
      collectCapability,
    )
    .addOption(new Option('--read-only', 'ViewBase alone').conflicts('capability'))
    .option(
      '--expiry <duration>',
      'how long it is valid: 1h to 7d (default 7d)',
      durationWithin(MIN_EXPIRY_S, MAX_EXPIRY_S),
    )
    .option('--session <id>', 'a session id, to expire its tokens alone')
    .option(
      '--feature-flag <flag>',
      'the event types with this feature flag it sees (repeatable; those without flags, every token sees)',
      collect,
    ),
).action(async (app: string, options: CreateOptions) =>
  (await import('./commands/app-tokens.ts')).createAppToken(app, options),
);

operator(
  appTokens
    .command('expire')
    .description("expire an application's tokens: all, or those of the sessions named")
    .argument(...APP)
    .option('--session <id>', 'only the tokens of this session (repeatable)', collect)
    .option(
      '--in <duration>',
      'let them work this much longer, at most 7d (default: end them now)',
      durationWithin(0, MAX_EXPIRY_S),
    ),
).action(async (app: string, options: ExpireOptions) =>
  (await import('./commands/app-tokens.ts')).expireAppTokens(app, options),
);

const dlq = program
  .command('dlq')
  .description('list and replay dead letters (permanently failed deliveries)')
  .addHelpText(
    'after',
    `
A replay schedules the deliveries again now, with a fresh attempt budget and
the same message id and bytes; while the endpoint is paused or disabled, they
are held until it is resumed.

Examples:
  $ courier dlq list acme main --since 2026-01-31T00:00:00Z
  $ courier dlq replay acme main                      # every dead letter of the endpoint
  $ courier dlq replay acme main --msg msg_01J… --msg inv-42`,
  );

operator(
  timeRange(
    dlq
      .command('list')
      .description("list an endpoint's dead letters, oldest first")
      .argument(...APP)
      .argument(...ENDPOINT),
    'dead letters',
  ),
).action(async (app: string, endpoint: string, options: DlqOptions) =>
  (await import('./commands/dlq.ts')).dlqList(app, endpoint, options),
);

operator(
  timeRange(
    dlq
      .command('replay')
      .description('replay dead letters: all in the range, or the ones named')
      .argument(...APP)
      .argument(...ENDPOINT)
      .option('--msg <message>', 'replay only this message: id or eventId (repeatable)', collect),
    'dead letters',
  ),
).action(async (app: string, endpoint: string, options: ReplayOptions) =>
  (await import('./commands/dlq.ts')).dlqReplay(app, endpoint, options),
);

signatureCommands(program);

program.parseAsync(process.argv).catch((error: unknown) => {
  process.stderr.write(`courier: ${printable(error instanceof Error ? error.message : String(error))}\n`);
  process.exit(error instanceof CliError ? error.exitCode : 1);
});
