/**
 * What `courier verify` and `courier sign` read, offline: a webhook's headers as a receiver got
 * them, its body's bytes, and endpoint secrets (failures exit 2).
 */
import { InvalidArgumentError } from 'commander';
import { parseSecret } from '../signing/secrets.ts';
import { usageError } from './errors.ts';
import { isoTime } from './input.ts';
import {
  HEADER_NAME,
  readAtFile,
  readAtFileBytes,
  STDIN,
  secretFromStdin,
  unquoted,
} from './resource-input.ts';
import { readSecretInput } from './terminal-input.ts';

/** `POST /webhooks HTTP/1.1` or `HTTP/1.1 200 OK`, heading a captured request's or response's head. */
const START_LINE = /^(?:[A-Z]+ \S+ HTTP\/\d(?:\.\d)?|HTTP\/\d(?:\.\d)? \d{3}\b.*)$/;

type Headers = Record<string, string>;

/**
 * A header as received added to those read so far: a repeated one joined with ", ", as HTTP
 * joins them (and the verifier splits signatures so joined); HTTP/2's pseudo-headers skipped.
 */
function received(headers: Headers, name: string, value: string): Headers {
  if (name.startsWith(':')) return headers;
  if (!HEADER_NAME.test(name)) throw new InvalidArgumentError("expected 'Name: value'.");
  // It would print as more than one line, and hide a header that came in it.
  if (/[\r\n]/.test(value)) throw new InvalidArgumentError(`header ${name}: a value holds a line break.`);
  const same = Object.keys(headers).find((given) => given.toLowerCase() === name.toLowerCase());
  if (same === undefined) return { ...headers, [name]: value };
  return { ...headers, [same]: `${headers[same]}, ${value}` };
}

function receivedLine(headers: Headers, line: string): Headers {
  const colon = line.indexOf(':', line.startsWith(':') ? 1 : 0);
  if (colon < 0) throw new InvalidArgumentError("expected 'Name: value'.");
  return received(headers, line.slice(0, colon).trim(), line.slice(colon + 1).trim());
}

/**
 * commander parser for verify's repeatable --header: 'Name: value', or `@FILE` (`@-`: standard
 * input) holding a request's head as captured (`Name: value` lines after the request line, up to
 * the blank line where a body would start; `curl -v`'s `> ` lines) or a JSON object of names and
 * values (Node's `req.headers`, as receivers log them).
 */
export function collectReceivedHeader(value: string, previous: Headers = {}): Headers {
  if (!value.startsWith('@')) return unquoted('--header', () => receivedLine(previous, value));
  const { text, source } = readAtFile(value, '--header', 'the headers');
  const headers = text.trimStart().startsWith('{')
    ? jsonHeaders(text, source, previous)
    : headLines(text, source, previous);
  if (headers === previous) throw new InvalidArgumentError(`${source} holds no header.`);
  return headers;
}

function headLines(text: string, source: string, previous: Headers): Headers {
  let lines = text.replace(/\r/g, '').split('\n');
  // curl -v: the request's lines start with "> ", its answer's with "< ", its notes with "* ".
  const verbose = /^[*>]/.test(lines.find((line) => line.trim() !== '') ?? '');
  if (verbose) lines = lines.map((line) => (line.startsWith('>') ? line.slice(2) : '#'));
  // A request's head ends at its first blank line, where its body starts; in a list of headers
  // alone, blank lines are skipped.
  let head = verbose;
  let headers = previous;
  for (const [i, line] of lines.entries()) {
    if (line.trim() === '') {
      if (head && headers !== previous) break;
      continue;
    }
    if (line.trimStart().startsWith('#')) continue;
    if (headers === previous && START_LINE.test(line.trim())) {
      head = true;
      continue;
    }
    try {
      headers = receivedLine(headers, line);
    } catch (error) {
      throw new InvalidArgumentError(`line ${i + 1} of ${source}: ${(error as Error).message}`);
    }
  }
  return headers;
}

function jsonHeaders(text: string, source: string, previous: Headers): Headers {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    // JSON.parse's message quotes the text around the error: a credential, possibly.
    throw new InvalidArgumentError(`${source} is not valid JSON.`);
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
    throw new InvalidArgumentError(`${source} must hold a JSON object of header names and values.`);
  }
  let headers = previous;
  for (const [name, given] of Object.entries(parsed)) {
    // Node gives a repeated header as an array.
    const values = Array.isArray(given) ? given : [given];
    if (!values.every((one) => typeof one === 'string')) {
      throw new InvalidArgumentError(`header ${name} in ${source}: expected a string (or strings).`);
    }
    try {
      headers = received(headers, name, values.join(', '));
    } catch (error) {
      throw new InvalidArgumentError(`header ${name} in ${source}: ${(error as Error).message}`);
    }
  }
  return headers;
}

/** The <body> argument: its bytes exactly, inline (as UTF-8), from `@FILE`, or `-` for standard input. */
export function webhookBody(value: string): Buffer {
  if (value === '-' || value.startsWith('@')) {
    return readAtFileBytes(value === '-' ? '@-' : value, '<body>', 'the body', value).bytes;
  }
  return Buffer.from(value);
}

/**
 * commander parser for a repeatable --secret (an endpoint's `whsec_…`; two during a rotation), or
 * `-` for secrets on standard input, separated by white space, out of `ps` and the shell's history.
 * Checked by secretsGiven: commander's refusal of a parser's error would quote the secret.
 */
export function collectSecret(value: string, previous: string[] = []): string[] {
  secretFromStdin(value);
  return [...previous, value];
}

export const SECRET_VARIABLE = 'COURIER_WEBHOOK_SECRET';

/**
 * The --secret values (`-` read: typed unseen at a terminal), else COURIER_WEBHOOK_SECRET's
 * (separated by white space), checked; errors never quote one.
 */
export async function secretsGiven(
  given: string[] | undefined,
  env: NodeJS.ProcessEnv = process.env,
  stdin: NodeJS.ReadableStream = process.stdin,
): Promise<Buffer[]> {
  const source = given ? '--secret' : SECRET_VARIABLE;
  let texts = given ?? (env[SECRET_VARIABLE] ?? '').split(/\s+/).filter(Boolean);
  // `-` in --secret's list (not in the variable): where the secrets read go.
  if (given?.includes(STDIN)) {
    const read = (await readSecretInput('the secret, or two separated by a space', stdin))
      .split(/\s+/)
      .filter(Boolean);
    if (read.length === 0) throw usageError('--secret -: no secret on standard input');
    texts = texts.flatMap((text) => (text === STDIN ? read : [text]));
  }
  if (texts.length === 0) {
    throw usageError(
      `give the endpoint's secret: --secret whsec_…, --secret - (standard input) or ${SECRET_VARIABLE}`,
    );
  }
  return texts.map((text, i) => {
    try {
      return parseSecret(text);
    } catch (error) {
      const which = texts.length > 1 ? `${source}, secret ${i + 1} of ${texts.length}` : source;
      throw usageError(`${which}: ${(error as Error).message}`);
    }
  });
}

/** Seconds since 1970 have 10 digits until the year 2286; 13 are milliseconds. */
export const MILLISECONDS_DIGITS = 13;

/** commander parser for sign's --timestamp: whole Unix seconds, as the header carries them. */
export function unixSeconds(value: string): number {
  if (!/^\d+$/.test(value)) throw new InvalidArgumentError('expected a Unix time in whole seconds.');
  if (value.length >= MILLISECONDS_DIGITS) {
    throw new InvalidArgumentError('expected seconds; this looks like milliseconds.');
  }
  return Number(value);
}

/** commander parser for --at: a Unix time in seconds (as webhook-timestamp is) or an ISO 8601 time; in ms. */
export function instant(value: string): number {
  const trimmed = value.trim();
  if (/^\d+$/.test(trimmed)) return unixSeconds(trimmed) * 1000;
  try {
    return Date.parse(isoTime(trimmed));
  } catch {
    throw new InvalidArgumentError(
      'expected a Unix time in seconds (1767225600) or an ISO 8601 time (2026-01-01T00:00:00Z).',
    );
  }
}

/** commander parser for sign's --id: printable ASCII without spaces, as a header value must be. */
export function webhookId(value: string): string {
  if (!/^[\x21-\x7e]{1,256}$/.test(value)) {
    throw new InvalidArgumentError('expected 1-256 printable ASCII characters without spaces.');
  }
  return value;
}
