/**
 * `courier apps` and `courier endpoints`: the applications and their endpoints, made, listed,
 * changed and removed from the shell (main.ts adds them to the program; the actions load lazily).
 */
import { type Command, Option } from 'commander';
import { MAX_IN_FLIGHT_MAX, RATE_LIMIT_MAX } from '../setting-limits.ts';
import type { OperatorOptions } from './api-client.ts';
import type { AppCreateOptions, AppsListOptions, AppUpdateOptions } from './commands/apps.ts';
import type * as EndpointCommands from './commands/endpoints.ts';
import type { EndpointAddOptions, UpdateOptions } from './commands/endpoints.ts';
import type { HeadersOptions } from './endpoint-headers.ts';
import { headerChanges, METADATA, rotation } from './endpoint-option-sets.ts';
import { collectEndpointChannel, collectEventType, positiveInteger } from './input.ts';
import { APP, ENDPOINT, operator, YES } from './options.ts';
import type { DeleteOptions } from './resource-calls.ts';
import {
  appName,
  collectHeader,
  collectMetadata,
  endpointUrl,
  orDefault,
  positiveIntegerUpTo,
  retryPolicy,
  retryPolicyOrDefault,
  signingSecret,
  uidName,
} from './resource-input.ts';
import type { RotateOptions } from './secret-rotation.ts';

const RATE_LIMIT = `requests per second at most, up to ${RATE_LIMIT_MAX}`;
const METADATA_UPDATE = `${METADATA.slice(0, -1)}: replaces every pair it has)`;
const rateLimit = positiveIntegerUpTo(RATE_LIMIT_MAX);
const RETRY_POLICY =
  'overrides of the retry policy, as JSON (the API\'s retryPolicy), such as \'{"giveUp": {"maxAttempts": 5}}\'; ' +
  '@FILE reads it from a file, @- from standard input';
const RETRY_POLICY_UPDATE =
  `${RETRY_POLICY}: replaces the overrides it has, from the next attempt on (a delivery already tried keeps its ` +
  'give-up time, a retry already scheduled its time); default removes them';

export function applicationCommands(program: Command): void {
  const apps = program
    .command('apps')
    .description('list, create, update and delete applications (one per customer)')
    .addHelpText(
      'after',
      `
An application holds one customer's endpoints and messages; commands name it by
its id (app_…) or by the uid you give it.

Examples:
  $ courier apps create "Acme Corp" --uid acme
  $ courier apps create "Acme Corp" --uid acme --get-if-exists   # again: no error
  $ courier apps update acme --name "Acme Inc" --rate-limit 50
  $ courier apps update acme --retry-policy '{"giveUp": {"maxAttempts": 5}}'
  $ courier apps show acme
  $ courier apps list`,
    );

  operator(
    apps
      .command('list')
      .description('list the applications, oldest first')
      .option('--limit <n>', 'at most this many (default: all)', positiveInteger),
  ).action(async (options: AppsListOptions) => (await import('./commands/apps.ts')).listApps(options));

  operator(
    apps
      .command('show')
      .description(
        'print an application: its name, rate limit, retry policy overrides, endpoints (how many, how many paused or disabled) and metadata',
      )
      .argument(...APP),
  ).action(async (app: string, options: OperatorOptions) =>
    (await import('./commands/apps.ts')).showApp(app, options),
  );

  operator(
    apps
      .command('create')
      .description('create an application and print its id')
      .argument('<name>', 'its name, shown to people (1-256 characters)', appName)
      .option('--uid <uid>', 'a name of your own to address it by (e.g. your customer id)', uidName)
      .option('--rate-limit <n>', `its endpoints' default rate limit, ${RATE_LIMIT}`, rateLimit)
      .option('--metadata <pair>', METADATA, collectMetadata)
      .option(
        '--retry-policy <json>',
        `its endpoints' ${RETRY_POLICY} (an endpoint's own apply over them)`,
        retryPolicy,
      )
      .option('--get-if-exists', 'if an application has this --uid, print that one instead of failing'),
  ).action(async (name: string, options: AppCreateOptions) =>
    (await import('./commands/apps.ts')).createApp(name, options),
  );

  operator(
    apps
      .command('update')
      .description('change an application: what is not given stays as it is')
      .argument(...APP)
      .option('--name <name>', 'its name, shown to people (1-256 characters)', appName)
      .option(
        '--uid <uid>',
        'rename it (later commands name it so; the operator application keeps courier-operator)',
        uidName,
      )
      .option(
        '--rate-limit <n>',
        `its endpoints' default rate limit, ${RATE_LIMIT}: endpoints made later take it, an existing one keeps its own ` +
          "(endpoints update --rate-limit default sets it), and the application's tokens may set none higher on an endpoint they make or move; " +
          'default removes it (COURIER_RATE_LIMIT instead)',
        orDefault(rateLimit),
      )
      .option('--metadata <pair>', METADATA_UPDATE, collectMetadata)
      .addOption(clearMetadata())
      .addOption(clearUid())
      .option(
        '--retry-policy <json>',
        `its endpoints' ${RETRY_POLICY_UPDATE}; existing endpoints take them too, an endpoint's own apply over them`,
        retryPolicyOrDefault,
      ),
  ).action(async (app: string, options: AppUpdateOptions) =>
    (await import('./commands/apps.ts')).updateApp(app, options),
  );

  operator(
    apps
      .command('delete')
      .description(
        'delete an application: its endpoints receive nothing more (its messages and attempts stay until COURIER_RETENTION ends)',
      )
      .argument(...APP)
      .option(...YES),
  ).action(async (app: string, options: DeleteOptions & OperatorOptions) =>
    (await import('./commands/apps.ts')).deleteApp(app, options),
  );
}

export function endpointCommands(program: Command): void {
  const endpoints = program
    .command('endpoints')
    .description(
      "list, show, add, update, pause, resume and remove an application's endpoints; their headers, secrets and retry policy",
    )
    .addHelpText(
      'after',
      `
\`courier endpoints <app>\` is \`courier endpoints list <app>\` (for an application
named like a command, write list).

Examples:
  $ courier endpoints add acme https://acme.example.com/webhooks --uid main \\
      --event-type invoice.paid --header 'Authorization: Bearer s3cret'
  $ courier endpoints acme --stats
  $ courier endpoints show acme main
  $ courier endpoints policy acme main    # the retry policy its deliveries follow
  $ courier endpoints update acme main --event-type invoice.paid --rate-limit default
  $ courier endpoints update acme main \\
      --retry-policy '{"classifier": {"overrides": {"404": "permanent"}}}'
  $ courier endpoints pause acme main     # deliveries are held until resumed
  $ courier endpoints resume acme main
  $ courier endpoints headers acme main --header 'X-Tenant: 42' --remove X-Old
  $ courier endpoints rotate-secret acme main --grace-period 2h

Like --token, the values of --header and --secret show in \`ps\` while the
command runs: --secret - reads the secret from standard input instead (at a
terminal, typed without being shown; a secret given is not printed back), and
--header @FILE reads 'Name: value' lines from a file (@- from standard input;
blank lines and lines starting with # are skipped):
  $ printf 'Authorization: Bearer %s\\n' "$TOKEN" |
      courier endpoints headers acme main --header @-`,
    );

  operator(
    endpoints
      .command('list', { isDefault: true })
      .description("list an application's endpoints with their status and limits")
      .argument(...APP)
      // As the default, list also receives mistyped commands (`courier endpoints paus acme main`): say so.
      .allowExcessArguments()
      .option(
        '--stats',
        'also count their messages of the last 28 days: delivered, pending, sending, failed',
      ),
  ).action(async (app: string, options: OperatorOptions & { stats?: boolean }, command: Command) => {
    if (command.args.length > 1) {
      // `courier endpoints --json pause acme main` reaches list too: commander stops at the option.
      const known = endpoints.commands.some((c) => c.name() === app);
      endpoints.error(
        known
          ? `error: put the options after the command: courier endpoints ${app} … ${command.args.slice(1).join(' ')}`
          : `error: unknown command '${app}' (list takes one application)`,
      );
    }
    await (await import('./commands/endpoints.ts')).endpoints(app, options);
  });

  operator(
    endpointSettings(
      endpoints
        .command('add')
        .description('create an endpoint, and print its signing secret (one made for it)')
        .argument(...APP)
        .argument('<url>', 'where messages are POSTed (http or https)', endpointUrl),
      'create',
    )
      .option(
        '--header <header>',
        "'Name: value' sent with every delivery (repeatable); @FILE reads such lines from a file, @- from standard input",
        collectHeader,
      )
      .option(
        '--secret <secret>',
        'sign with this secret (whsec_…, e.g. moved from another service; - reads it from standard input, out of ps, typed unseen at a terminal); default: a new one',
        signingSecret,
      ),
  ).action(async (app: string, url: string, options: EndpointAddOptions) =>
    (await import('./commands/endpoints.ts')).addEndpoint(app, url, options),
  );

  operator(
    endpointSettings(
      endpoints
        .command('update')
        .description('change an endpoint: what is not given stays as it is')
        .argument(...APP)
        .argument(...ENDPOINT)
        .option(
          '--new-url <url>',
          'where messages are POSTed from now on (public-only stays as it is unless given)',
          endpointUrl,
        ),
      'update',
    )
      .addOption(new Option('--all-event-types', 'take every event type again').conflicts('eventType'))
      .addOption(new Option('--all-channels', 'take every channel again').conflicts('channel'))
      .addOption(clearMetadata())
      .addOption(clearUid())
      .option('--no-public-only', 'let it reach the private networks COURIER_ALLOW_PRIVATE_NETWORKS opens'),
  ).action(async (app: string, endpoint: string, options: UpdateOptions) =>
    (await import('./commands/endpoints.ts')).updateEndpoint(app, endpoint, options),
  );

  operator(
    headerChanges(
      endpoints
        .command('headers')
        .argument(...APP)
        .argument(...ENDPOINT),
    ),
  ).action(async (app: string, endpoint: string, options: HeadersOptions) =>
    (await import('./commands/endpoints.ts')).endpointHeaders(app, endpoint, options),
  );

  operator(
    rotation(
      endpoints
        .command('rotate-secret')
        .argument(...APP)
        .argument(...ENDPOINT),
    ),
  ).action(async (app: string, endpoint: string, options: RotateOptions) =>
    (await import('./commands/endpoints.ts')).rotateEndpointSecret(app, endpoint, options),
  );

  // The commands that name one endpoint and take nothing else.
  type Run = (
    m: typeof EndpointCommands,
    app: string,
    endpoint: string,
    options: DeleteOptions & OperatorOptions,
  ) => Promise<void>;
  const onOne: [string, string, Run, typeof YES?][] = [
    [
      'pause',
      'hold its deliveries until it is resumed (or their messages pass COURIER_RETENTION)',
      (m, ...args) => m.changeStatus('pause', ...args),
    ],
    [
      'resume',
      'deliver again to a paused or disabled endpoint; what it held goes out',
      (m, ...args) => m.changeStatus('resume', ...args),
    ],
    [
      'remove',
      'delete an endpoint: it receives nothing more',
      (m, ...args) => m.removeEndpoint(...args),
      YES,
    ],
    ['secret', 'print the secret its deliveries are signed with', (m, ...args) => m.endpointSecret(...args)],
    [
      'show',
      'print an endpoint: its settings, filters, header names, retry policy overrides, metadata and last 28 days',
      (m, ...args) => m.showEndpoint(...args),
    ],
    [
      'policy',
      'print the retry policy its deliveries follow, and the overrides that make it (--retry-policy sets them)',
      (m, ...args) => m.endpointPolicy(...args),
    ],
  ];
  for (const [name, description, run, option] of onOne) {
    const command = endpoints
      .command(name)
      .description(description)
      .argument(...APP)
      .argument(...ENDPOINT);
    if (option) command.option(...option);
    operator(command).action(
      async (app: string, endpoint: string, options: DeleteOptions & OperatorOptions) =>
        run(await import('./commands/endpoints.ts'), app, endpoint, options),
    );
  }
}

/**
 * The settings `endpoints add` sets and `endpoints update` changes (where `default` sets a limit
 * to the current default).
 */
function endpointSettings(command: Command, verb: 'create' | 'update'): Command {
  const update = verb === 'update';
  const bounded = <T>(parse: (value: string) => T) => (update ? orDefault(parse) : parse);
  const restore = update ? '; default sets it to that' : '';
  return command
    .option(
      '--uid <uid>',
      update ? 'rename it (later commands name it so)' : 'a name of your own to address it by',
      uidName,
    )
    .option(
      '--event-type <type>',
      `only messages of this event type (repeatable${verb === 'create' ? '; default: all' : ': replaces the list'})`,
      collectEventType,
    )
    .option(
      '--channel <channel>',
      `only messages on this channel (repeatable${verb === 'create' ? '; default: all' : ': replaces the list'})`,
      collectEndpointChannel,
    )
    .option('--description <text>', update ? "what it is for ('' clears it)" : 'what it is for')
    .option('--metadata <pair>', update ? METADATA_UPDATE : METADATA, collectMetadata)
    .option(
      '--rate-limit <n>',
      `${RATE_LIMIT} (default: the application's, else COURIER_RATE_LIMIT${restore})`,
      bounded(rateLimit),
    )
    .option(
      '--max-in-flight <n>',
      `concurrent requests at most, up to ${MAX_IN_FLIGHT_MAX} (default: COURIER_MAX_IN_FLIGHT${restore})`,
      bounded(positiveIntegerUpTo(MAX_IN_FLIGHT_MAX)),
    )
    .option(
      '--retry-policy <json>',
      `${update ? RETRY_POLICY_UPDATE : RETRY_POLICY} (applied over its application's)`,
      update ? retryPolicyOrDefault : retryPolicy,
    )
    .option(
      '--public-only',
      'reach public addresses only, whatever COURIER_ALLOW_PRIVATE_NETWORKS opens (as a token-made endpoint does)',
    );
}

/** On `update`: the uid removed, so only the id names it (the API's uid: null). */
function clearUid(): Option {
  return new Option('--clear-uid', 'remove its uid: later commands name it by its id').conflicts('uid');
}

/** On `update`, beside --metadata (which replaces every pair). */
function clearMetadata(): Option {
  return new Option('--clear-metadata', 'remove every metadata pair').conflicts('metadata');
}
