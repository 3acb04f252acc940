/**
 * Checks of what the operator typed to make or change an application or an endpoint, as the API
 * checks it (failures exit 2 with nothing sent).
 */
import { readFileSync } from 'node:fs';
import { isatty } from 'node:tty';
import { InvalidArgumentError } from 'commander';
import { isValidUid } from '../ids.ts';
import { formatSecret, parseSecret } from '../signing/secrets.ts';
import { usageError } from './errors.ts';
import { positiveInteger } from './input.ts';
import { readSecretInput } from './terminal-input.ts';

export const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

/**
 * commander parser for a repeatable --header (an endpoint's own headers, sent with every delivery):
 * 'Name: value', or `@file` (`@-`: standard input) holding such lines, blank ones and lines
 * starting with # skipped, so a credential stays out of `ps` and the shell's history (errors about
 * a file's line name its number, never its value). A name given twice, in any case, is refused:
 * one of the two would be lost.
 */
export function collectHeader(value: string, previous: Record<string, string> = {}): Record<string, string> {
  if (!value.startsWith('@')) return unquoted('--header', () => withHeader(value, previous));
  const { text, source } = readAtFile(value, '--header', "'Name: value' lines");
  let headers = previous;
  for (const [i, line] of text.split('\n').entries()) {
    if (line.trim() === '' || line.trimStart().startsWith('#')) continue;
    try {
      headers = withHeader(line, headers);
    } catch (error) {
      throw new InvalidArgumentError(`line ${i + 1} of ${source}: ${(error as Error).message}`);
    }
  }
  if (headers === previous) throw new InvalidArgumentError(`${source} holds no 'Name: value' line.`);
  return headers;
}

/**
 * An option's `@FILE` (`@-`: standard input), read as commander parses: a parser cannot wait, and
 * nothing else is running yet. The bytes as they are (a signed body's must not change).
 */
export function readAtFileBytes(
  value: string,
  option: string,
  what: string,
  /** How standard input was asked for, as the operator typed it. */
  typed = '@-',
): { bytes: Buffer; source: string } {
  if (value === '@') throw new InvalidArgumentError('expected @FILE, or @- for standard input.');
  const source = value === '@-' ? 'standard input' : value.slice(1);
  try {
    if (value === '@-') {
      takeStdin(`${option} ${typed}`);
      waitingOnTerminal(what);
    }
    return { bytes: readFileSync(value === '@-' ? 0 : source), source };
  } catch (error) {
    if (error instanceof InvalidArgumentError) throw error;
    throw new InvalidArgumentError(`cannot read ${source}: ${(error as Error).message}.`);
  }
}

/** An option's `@FILE` as text; a BOM some editors write is not part of it. */
export function readAtFile(value: string, option: string, what: string): { text: string; source: string } {
  const { bytes, source } = readAtFileBytes(value, option, what);
  return { text: bytes.toString('utf8').replace(/^\uFEFF/, ''), source };
}

function withHeader(value: string, previous: Record<string, string>): Record<string, string> {
  const colon = value.indexOf(':');
  const name = value.slice(0, Math.max(colon, 0)).trim();
  if (!HEADER_NAME.test(name)) throw new InvalidArgumentError("expected 'Name: value'.");
  if (Object.keys(previous).some((given) => given.toLowerCase() === name.toLowerCase())) {
    throw new InvalidArgumentError(`header ${name} given twice.`);
  }
  return { ...previous, [name]: value.slice(colon + 1).trim() };
}

/** commander parser for a repeatable --remove <name>: a header name. */
export function collectHeaderName(value: string, previous: string[] = []): string[] {
  if (!HEADER_NAME.test(value))
    throw new InvalidArgumentError("expected a header name (letters, digits, !#$%&'*+-.^_`|~).");
  return [...previous, value];
}

const METADATA_VALUE_MAX = 4096;
const METADATA_KEYS_MAX = 100;

/**
 * commander parser for a repeatable --metadata KEY=VALUE: an application's or endpoint's own
 * string pairs (Svix's metadata), bounded as the API bounds them. A key given twice is refused.
 */
export function collectMetadata(
  value: string,
  previous: Record<string, string> = {},
): Record<string, string> {
  const equals = value.indexOf('=');
  const key = value.slice(0, Math.max(equals, 0));
  if (key === '') throw new InvalidArgumentError('expected KEY=VALUE.');
  // The API's JSON parser refuses the key, as a prototype's.
  if (key === '__proto__') throw new InvalidArgumentError('__proto__ cannot be a key.');
  if (Object.hasOwn(previous, key)) throw new InvalidArgumentError(`key ${key} given twice.`);
  if (Object.keys(previous).length === METADATA_KEYS_MAX) {
    throw new InvalidArgumentError(`at most ${METADATA_KEYS_MAX} keys.`);
  }
  const text = value.slice(equals + 1);
  if ([...text].length > METADATA_VALUE_MAX) {
    throw new InvalidArgumentError(`the value of ${key} is longer than ${METADATA_VALUE_MAX} characters.`);
  }
  return { ...previous, [key]: text };
}

/** An update's metadata as the API's PATCH takes it: the pairs given replace all, {} removes all. */
export const metadataGiven = (options: {
  metadata?: Record<string, string>;
  clearMetadata?: boolean;
}): Record<string, string> | undefined => (options.clearMetadata ? {} : options.metadata);

/**
 * commander parser for --retry-policy: the overrides of the retry policy as the API's `retryPolicy`
 * takes them (a JSON object), inline or from `@FILE` / `@-`. Their fields and bounds are the API's
 * to check: it builds the policy they make over the installation's defaults.
 */
export const retryPolicy = (value: string): Record<string, unknown> => parseRetryPolicy(value, false);

/** For the updates: `default` as it is (sent as null: no overrides), else a policy. */
export const retryPolicyOrDefault = (value: string): Record<string, unknown> | 'default' =>
  value === 'default' ? value : parseRetryPolicy(value, true);

function parseRetryPolicy(value: string, update: boolean): Record<string, unknown> {
  const { text, source } = value.startsWith('@')
    ? readAtFile(value, '--retry-policy', 'the policy as JSON')
    : { text: value, source: undefined };
  const where = source === undefined ? '' : ` in ${source}`;
  let policy: unknown;
  try {
    policy = JSON.parse(text, (key, field) => {
      // The API's JSON parser refuses the key, as a prototype's.
      if (key === '__proto__') throw new InvalidArgumentError(`__proto__ cannot be a key${where}.`);
      return field;
    });
  } catch (error) {
    if (error instanceof InvalidArgumentError) throw error;
    // V8 quotes the start of the text: on one line, as the error is.
    const why = (error as Error).message.replace(/\r?\n/g, '\\n');
    // A mistyped `default` on an update is not JSON either.
    const orDefault = update && source === undefined ? ', or default' : '';
    throw new InvalidArgumentError(`not JSON${where}: ${why}${orDefault}.`);
  }
  if (policy === null || typeof policy !== 'object' || Array.isArray(policy)) {
    throw new InvalidArgumentError(
      `expected a JSON object${where}, such as '{"giveUp": {"maxAttempts": 5}}'${update ? ', or default' : ''}.`,
    );
  }
  return policy as Record<string, unknown>;
}

/** commander parser for a setting the API bounds (a rate limit, an in-flight cap). */
export function positiveIntegerUpTo(max: number): (value: string) => number {
  return (value) => {
    const n = positiveInteger(value);
    if (n > max) throw new InvalidArgumentError(`expected at most ${max.toLocaleString('en')}.`);
    return n;
  };
}

/** --uid: a name of the operator's own, as the API takes one (not shaped like an id). */
export function uidName(value: string): string {
  if (!isValidUid(value)) {
    throw new InvalidArgumentError(
      'expected 1-256 of letters, digits and - _ ., not . or .., not starting with an id prefix such as app_.',
    );
  }
  return value;
}

/**
 * An endpoint's --secret: standard base64 of 24-75 bytes, whsec_ or not, as the API takes it; in
 * the form the API stores it (whsec_ and canonical base64), so it compares with the API's. `-`
 * stays as it is: `secretGiven` reads it from standard input, where `ps` does not show it.
 */
export function signingSecret(value: string): string {
  if (secretFromStdin(value)) return value;
  return unquoted('--secret', () => formatSecret(parseSecret(value)));
}

/**
 * A parser's refusal naming its option alone: commander's own message quotes the value refused,
 * a secret or an Authorization header's credential, perhaps.
 */
export function unquoted<T>(option: string, parse: () => T): T {
  try {
    return parse();
  } catch (error) {
    throw usageError(`${option}: ${(error as Error).message.replace(/\.$/, '')}`);
  }
}

/** `-`, an option's value that stands for standard input. */
export const STDIN = '-';

/** `--secret -`: standard input taken for it as the options are parsed, and read as the command runs. */
export function secretFromStdin(value: string): boolean {
  if (value !== STDIN) return false;
  takeStdin('--secret -');
  return true;
}

/** Said when standard input is a terminal: the command waits for what is typed there. */
function waitingOnTerminal(what: string): void {
  if (isatty(0)) process.stderr.write(`courier: reading ${what} from the terminal; end with Ctrl-D\n`);
}

/** Who reads standard input in this run: one option may (a second would read nothing). */
let stdinTakenBy: string | undefined;

function takeStdin(option: string): void {
  if (stdinTakenBy !== undefined) {
    throw new InvalidArgumentError(`standard input is already taken by ${stdinTakenBy}.`);
  }
  stdinTakenBy = option;
}

/** A --secret as sent: given, or read from standard input for `-` (its line's ends trimmed). */
export async function secretGiven(
  value: string | undefined,
  stdin: NodeJS.ReadableStream = process.stdin,
): Promise<string | undefined> {
  if (value !== STDIN) return value;
  const text = (await readSecretInput('the secret', stdin)).trim();
  try {
    return formatSecret(parseSecret(text));
  } catch (error) {
    throw usageError(`the secret on standard input: ${(error as Error).message}`);
  }
}

/** An endpoint's <url>: http or https (the API checks the address it names). */
export function endpointUrl(value: string): string {
  let protocol: string | undefined;
  try {
    protocol = new URL(value).protocol;
  } catch {}
  if (protocol !== 'http:' && protocol !== 'https:')
    throw new InvalidArgumentError('expected an http(s) URL.');
  return value;
}

/** An application's <name>: 1-256 characters. */
export function appName(value: string): string {
  if (value === '' || [...value].length > 256) throw new InvalidArgumentError('expected 1-256 characters.');
  return value;
}

/** An `orDefault` value as the API takes it: `default` is its null. */
export const orNull = <T>(value: T | 'default' | undefined): T | null | undefined =>
  value === 'default' ? null : value;

/**
 * For the update commands: `default` as it is (sent as the API's null, the default), else the
 * value `parse` checks. Kept as the word: commander turns a parser's null into ''.
 */
export function orDefault<T>(parse: (value: string) => T): (value: string) => T | 'default' {
  return (value) => {
    if (value === 'default') return value;
    try {
      return parse(value);
    } catch (error) {
      throw new InvalidArgumentError(`${(error as Error).message.replace(/\.$/, '')}, or default.`);
    }
  };
}
