/**
 * `courier operational-endpoints`: where Courier sends what operators should know, made, listed,
 * removed, their headers and secrets (main.ts adds them to the program; the actions load lazily).
 */
import type { Command } from 'commander';
import type { OperatorOptions } from './api-client.ts';
import type { AddOptions } from './commands/operational-endpoints.ts';
import type { HeadersOptions } from './endpoint-headers.ts';
import { headerChanges, METADATA, rotation } from './endpoint-option-sets.ts';
import { collectEventType } from './input.ts';
import { OPERATIONAL_ENDPOINT, operator, YES } from './options.ts';
import type { DeleteOptions } from './resource-calls.ts';
import { collectMetadata, endpointUrl, uidName } from './resource-input.ts';
import type { RotateOptions } from './secret-rotation.ts';

export function operationalEndpointCommands(program: Command): void {
  const operational = program
    .command('operational-endpoints')
    .description('where operational events go (dead letters, pauses, …)')
    .addHelpText(
      'after',
      `
Operational webhook endpoints receive, signed like any webhook, the event types
their --filter-type options name (all when none): message.attempt.exhausted,
.failing, .recovered; endpoint.created, .updated, .deleted, .enabled, .disabled,
.paused; background_task.finished. Verify them with the secret add prints.

Examples:
  $ courier operational-endpoints add https://ops.example.com/courier --uid oncall \\
      --filter-type message.attempt.exhausted --filter-type endpoint.paused
  $ courier operational-endpoints list
  $ courier operational-endpoints headers oncall --header 'Authorization: Bearer s3cret'
  $ courier operational-endpoints rotate-secret oncall
  $ courier operational-endpoints remove oncall`,
    );

  operator(operational.command('list').description('list the operational webhook endpoints')).action(
    async (options: OperatorOptions) =>
      (await import('./commands/operational-endpoints.ts')).listOperationalEndpoints(options),
  );

  operator(
    operational
      .command('add')
      .description('create one, and print its signing secret')
      .argument('<url>', 'where the events are POSTed', endpointUrl)
      .option('--uid <uid>', 'a name of your own for it', uidName)
      .option('--filter-type <type>', 'only this event type (repeatable; default: all)', collectEventType)
      .option('--description <text>', 'what it is for')
      .option('--metadata <pair>', METADATA, collectMetadata),
  ).action(async (url: string, options: AddOptions) =>
    (await import('./commands/operational-endpoints.ts')).addOperationalEndpoint(url, options),
  );

  operator(
    operational
      .command('remove')
      .description('delete one: it receives nothing more')
      .argument(...OPERATIONAL_ENDPOINT)
      .option(...YES),
  ).action(async (endpoint: string, options: DeleteOptions & OperatorOptions) =>
    (await import('./commands/operational-endpoints.ts')).removeOperationalEndpoint(endpoint, options),
  );

  operator(
    operational
      .command('secret')
      .description('print the secret its deliveries are signed with')
      .argument(...OPERATIONAL_ENDPOINT),
  ).action(async (endpoint: string, options: OperatorOptions) =>
    (await import('./commands/operational-endpoints.ts')).operationalEndpointSecret(endpoint, options),
  );

  operator(headerChanges(operational.command('headers').argument(...OPERATIONAL_ENDPOINT))).action(
    async (endpoint: string, options: HeadersOptions) =>
      (await import('./commands/operational-endpoints.ts')).operationalEndpointHeaders(endpoint, options),
  );

  operator(rotation(operational.command('rotate-secret').argument(...OPERATIONAL_ENDPOINT))).action(
    async (endpoint: string, options: RotateOptions) =>
      (await import('./commands/operational-endpoints.ts')).rotateOperationalEndpointSecret(
        endpoint,
        options,
      ),
  );
}
