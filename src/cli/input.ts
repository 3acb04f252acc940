/** Checks of what the operator typed, done before anything is sent (failures exit 2). */
import { readFile } from 'node:fs/promises';
import { InvalidArgumentError } from 'commander';
import { CAPABILITIES } from '../api/app-capabilities.ts';
import { parsedJsonProblem } from '../api/json-checks.ts';
import {
  CHANNEL_PATTERN,
  EVENT_TYPE_PATTERN,
  EXAMPLE_TAG,
  EXAMPLE_TAG_RESERVED,
  MESSAGE_NAMES_MAX,
  TAG_PATTERN,
} from '../message-limits.ts';
import { formatDuration, parseDuration } from '../policy/duration.ts';
import { ENDPOINT_CHANNELS_MAX } from '../setting-limits.ts';
import { usageError } from './errors.ts';

/**
 * commander parser for repeatable options (`--channel a --channel b`); commas separate values too.
 * A value with no name in it (`--channel ,`) is refused: taken as no channel, the message went to
 * every endpoint without a channel filter.
 */
export function collect(value: string, previous: string[] = []): string[] {
  const names = value
    .split(',')
    .map((name) => name.trim())
    .filter(Boolean);
  if (names.length === 0)
    throw new InvalidArgumentError('expected a name (or several, separated by commas).');
  return [...previous, ...names];
}

/** An event type, channel or tag name checked as the API checks it (`pattern`): a mistake exits 2 before anything is sent. */
function messageName(what: string, pattern: string, characters: string) {
  const valid = new RegExp(pattern, 'u');
  return (name: string): string => {
    if (!valid.test(name)) {
      const a = /^[aeiou]/.test(what) ? 'an' : 'a';
      throw new InvalidArgumentError(`${JSON.stringify(name)} is not ${a} ${what} (${characters}).`);
    }
    return name;
  };
}
const CHANNEL = ['channel', CHANNEL_PATTERN, '1-128 of letters, digits and - _ . :'] as const;
const TAG = ['tag', TAG_PATTERN, '1-128 of letters, digits and - _ . / \\ #'] as const;

/** An event type name: send's <event-type>, each --event-type. */
export const eventTypeName = messageName(
  'event type',
  EVENT_TYPE_PATTERN,
  '1-256 of letters, digits and - _ .',
);

/** A repeatable --event-type: each checked; a name given twice counts once (an endpoint's list refuses repeats). */
export function collectEventType(value: string, previous: string[] = []): string[] {
  return [...new Set(collect(value, previous))].map(eventTypeName);
}

/**
 * The --channel and --tag filters (messages, bulk-replay): one name each, as the API filters by one; given twice,
 * refused rather than the first silently dropped.
 */
function oneMessageName(what: string, pattern: string, characters: string) {
  const check = messageName(what, pattern, characters);
  return (name: string, previous?: string): string => {
    if (previous !== undefined) throw new InvalidArgumentError(`one ${what} only: the API filters by one.`);
    return check(name);
  };
}
export const channelFilter = oneMessageName(...CHANNEL);
export const tagFilter = oneMessageName(...TAG);

/**
 * commander parser for a repeatable --channel or --tag of a message, or an endpoint's --channel:
 * each checked, at most `max` on its `holder`, tags not EXAMPLE_TAG; a name given twice counts once
 * (the API refuses a list with repeats).
 */
function messageNames(
  [what, pattern, characters]: readonly [string, string, string],
  { holder = 'one message', refuseExample = false, max = MESSAGE_NAMES_MAX } = {},
) {
  const check = messageName(what, pattern, characters);
  return (value: string, previous: string[] = []): string[] => {
    const names = [...new Set(collect(value, previous))].map(check);
    if (refuseExample && names.includes(EXAMPLE_TAG)) {
      throw new InvalidArgumentError(`${EXAMPLE_TAG_RESERVED}.`);
    }
    if (names.length > max) {
      throw new InvalidArgumentError(`at most ${max} ${what}s on ${holder}.`);
    }
    return names;
  };
}
export const collectChannel = messageNames(CHANNEL);
export const collectTag = messageNames(TAG, { refuseExample: true });
/** An endpoint's --channel: the channels it takes. */
export const collectEndpointChannel = messageNames(CHANNEL, {
  holder: 'one endpoint',
  max: ENDPOINT_CHANNELS_MAX,
});

/**
 * --status of bulk-replay and messages: Svix's four standings, in the order of their codes 0–3 and
 * the words `courier status` uses; pending covers its pending and retrying.
 */
export const MESSAGE_STANDINGS = ['delivered', 'pending', 'failed', 'sending'] as const;
/** bulk-replay's --status-code-class (0: no response). */
export const STATUS_CODE_CLASSES = ['0', '100', '200', '300', '400', '500'] as const;

/**
 * commander parser for the repeatable --capability: Svix's names, commas separating them too; a
 * name given twice counts once.
 */
export function collectCapability(value: string, previous: string[] = []): string[] {
  const names = [...new Set(collect(value, previous))];
  const unknown = names.find((n) => !(CAPABILITIES as readonly string[]).includes(n));
  if (unknown !== undefined) {
    throw new InvalidArgumentError(`${unknown} is not a capability: expected ${CAPABILITIES.join(', ')}.`);
  }
  return names;
}

/**
 * commander parser for a duration (90m, 2h, 7d; 0 for none) as whole seconds within
 * [minS, maxS], said as the API would refuse it otherwise.
 */
export function durationWithin(minS: number, maxS: number): (value: string) => number {
  const bounds = `between ${formatDuration(minS * 1000)} and ${formatDuration(maxS * 1000)}`;
  return (value) => {
    let ms: number;
    try {
      ms = value.trim() === '0' ? 0 : parseDuration(value);
    } catch (error) {
      throw new InvalidArgumentError(`${(error as Error).message}.`);
    }
    if (ms % 1000 !== 0) throw new InvalidArgumentError('expected whole seconds, such as 90m, 2h or 7d.');
    if (ms < minS * 1000 || ms > maxS * 1000) throw new InvalidArgumentError(`expected ${bounds}.`);
    return ms / 1000;
  };
}

const HOUR_MS = 3_600_000;

/** commander parser for a duration in whole hours (24h, 7d) within [minH, maxH], returned in hours. */
export function wholeHoursWithin(minH: number, maxH: number): (value: string) => number {
  const expected = `expected whole hours between ${formatDuration(minH * HOUR_MS)} and ${formatDuration(maxH * HOUR_MS)}, such as 24h or 7d.`;
  return (value) => {
    let ms: number;
    try {
      ms = parseDuration(value);
    } catch {
      throw new InvalidArgumentError(expected);
    }
    if (ms % HOUR_MS !== 0 || ms < minH * HOUR_MS || ms > maxH * HOUR_MS)
      throw new InvalidArgumentError(expected);
    return ms / HOUR_MS;
  };
}

/**
 * commander parser for an idempotency key: 1-256 characters, as the API takes; printable ASCII, as
 * fetch trims spaces at the ends and refuses control characters, and bytes beyond ASCII are read
 * differently by proxies and servers.
 */
export function idempotencyKey(value: string): string {
  if (!/^[\x21-\x7e](?:[\x20-\x7e]{0,254}[\x21-\x7e])?$/.test(value)) {
    throw new InvalidArgumentError(
      'expected 1-256 printable ASCII characters, not beginning or ending with a space.',
    );
  }
  return value;
}

/** commander parser for counts such as --limit. */
export function positiveInteger(value: string): number {
  const n = Number(value);
  if (!/^\d+$/.test(value) || !Number.isSafeInteger(n) || n < 1) {
    throw new InvalidArgumentError('expected a positive whole number.');
  }
  return n;
}

const ISO_TIME = /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?)(Z|[+-]\d{2}:?\d{2})?)?$/i;

/**
 * commander parser for --since/--until: an ISO 8601 date or date-time (2026-01-31,
 * 2026-01-31T12:00:00Z, with an offset…), sent in the API's RFC 3339 form. A time without a zone
 * is taken as UTC, so the same command means the same range on every machine.
 */
export function isoTime(value: string): string {
  const m = ISO_TIME.exec(value.trim());
  const [, y, mo, d, time = '00:00:00', zone = 'Z'] = m ?? [];
  const ms = m ? Date.parse(`${y}-${mo}-${d}T${time}${zone.toUpperCase()}`) : Number.NaN;
  // Date.parse accepts 2026-02-30 (as March 2): the day must exist.
  const day = new Date(Date.UTC(Number(y), Number(mo) - 1, Number(d)));
  if (Number.isNaN(ms) || day.getUTCMonth() !== Number(mo) - 1 || day.getUTCDate() !== Number(d)) {
    throw new InvalidArgumentError('expected an ISO 8601 time such as 2026-01-31 or 2026-01-31T12:00:00Z.');
  }
  return new Date(ms).toISOString();
}

/**
 * --since before --until (both normalised by isoTime, so they compare as strings): an empty range
 * is a mistake (the two swapped, most likely), not a question whose answer is none.
 */
export function checkTimeRange(options: { since?: string; until?: string }): void {
  if (options.since && options.until && options.since >= options.until) {
    throw usageError(`--since (${options.since}) must be before --until (${options.until})`);
  }
}

/**
 * The payload argument: inline JSON, `@file` or `-` (standard input). It must be a JSON object,
 * as the API requires, so a typo fails here instead of as a 422.
 */
export async function readPayload(
  arg: string,
  stdin: NodeJS.ReadableStream = process.stdin,
): Promise<object> {
  let text: string;
  let source: string;
  if (arg === '-') {
    source = 'standard input';
    text = await readAll(stdin);
  } else if (arg.startsWith('@')) {
    source = arg.slice(1);
    try {
      text = await readFile(source, 'utf8');
    } catch (error) {
      throw usageError(`cannot read payload file ${source}: ${(error as Error).message}`);
    }
  } else {
    source = 'the payload argument';
    text = arg;
  }
  let payload: unknown;
  try {
    payload = JSON.parse(text);
  } catch (error) {
    throw usageError(`invalid JSON in ${source}: ${(error as Error).message}`);
  }
  if (payload === null || typeof payload !== 'object' || Array.isArray(payload)) {
    throw usageError(`the payload in ${source} must be a JSON object ({…})`);
  }
  // The API refuses what JSON.parse would change (a 64-bit id as a number): it must see it as typed.
  const problem = parsedJsonProblem(text, payload);
  if (problem) throw usageError(`${problem.replace(/^Body/, `the payload in ${source}`)}`);
  return payload;
}

export async function readAll(stream: NodeJS.ReadableStream): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk));
  return Buffer.concat(chunks).toString('utf8');
}
