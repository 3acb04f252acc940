/** The arguments and options the operator commands share (main.ts puts them together). */
import { type Command, Option } from 'commander';
import { channelFilter, collectEventType, isoTime, MESSAGE_STANDINGS, tagFilter } from './input.ts';

export const APP = ['<app>', 'application id (app_…) or uid'] as const;
export const ENDPOINT = ['<endpoint>', 'endpoint id (ep_…) or uid'] as const;
export const OPERATIONAL_ENDPOINT = ['<endpoint>', 'operational webhook endpoint id (ep_…) or uid'] as const;

/** The connection and output options every operator command ends with. */
export function operator(command: Command): Command {
  return command
    .option(
      '--url <url>',
      'Courier base URL (default: $COURIER_URL, else http://$COURIER_HOST:$COURIER_PORT)',
    )
    .option('--token <token>', 'API token (default: $COURIER_TOKEN, else $COURIER_ADMIN_TOKEN)')
    .option('--json', 'print JSON instead of a table (nothing else goes to stdout)');
}

/** --since/--until of the dead-letter commands and the message list: `what` (dead letters) since… */
export function timeRange(command: Command, what: string): Command {
  return command
    .option('--since <time>', `only ${what} since this ISO 8601 time (UTC unless zoned)`, isoTime)
    .option('--until <time>', `only ${what} before this ISO 8601 time`, isoTime);
}

/** --since (required) and --until of the replay commands, which pick messages by publish time. */
export function publishRange(command: Command): Command {
  return command
    .requiredOption(
      '--since <time>',
      'messages published since this ISO 8601 time (UTC unless zoned)',
      isoTime,
    )
    .option('--until <time>', 'and before this ISO 8601 time', isoTime);
}

/** --status: where a message stands at an endpoint (Svix's four standings, in the CLI's words). */
export const standingOption = (help: string) =>
  new Option('--status <status>', help).choices(MESSAGE_STANDINGS);

/** --event-type, --channel and --tag of the message list and bulk-replay, as the API filters. */
export function messageFilters(command: Command): Command {
  return command
    .option('--event-type <type>', 'only messages of this event type (repeatable)', collectEventType)
    .option('--channel <channel>', 'only messages sent to this channel', channelFilter)
    .option('--tag <tag>', 'only messages with this tag', tagFilter);
}

/** A deletion's --yes: at a terminal the deletion is asked about otherwise, from a script run there too. */
export const YES = [
  '-y, --yes',
  'delete without asking (asked only when standard input and stderr are a terminal; scripts run from one: pass --yes)',
] as const;
