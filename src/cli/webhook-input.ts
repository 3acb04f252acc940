/**
 * What `courier verify` and `courier sign` read, offline: a webhook's headers as a receiver got
 * them, its body's bytes, and endpoint secrets (failures exit 2).
 */
import { InvalidArgumentError } from 'commander';
import { parseSecret } from '../signing/secrets.ts';
import { usageError } from './errors.ts';
import { isoTime } from './input.ts';
import { readAtFileBytes, withHeader } from './resource-input.ts';

/** `POST /webhooks HTTP/1.1` or `HTTP/1.1 200 OK`, heading a captured request's or response's head. */
const START_LINE = /^(?:[A-Z]+ \S+ HTTP\/\d(?:\.\d)?|HTTP\/\d(?:\.\d)? \d{3}\b.*)$/;

/**
 * commander parser for verify's repeatable --header: 'Name: value', or `@FILE` (`@-`: standard
 * input) holding a request's head as captured (`Name: value` lines, a request line before them;
 * it ends at the first blank line, where a body would start) or a JSON object of names and values
 * (Node's `req.headers`, as receivers log them).
 */
export function collectReceivedHeader(
  value: string,
  previous: Record<string, string> = {},
): Record<string, string> {
  if (!value.startsWith('@')) return withHeader(value, previous);
  const { bytes, source } = readAtFileBytes(value, '--header', 'the headers');
  const text = bytes.toString('utf8').replace(/^\uFEFF/, '');
  const headers = text.trimStart().startsWith('{')
    ? jsonHeaders(text, source, previous)
    : headLines(text, source, previous);
  if (headers === previous) throw new InvalidArgumentError(`${source} holds no header.`);
  return headers;
}

function headLines(text: string, source: string, previous: Record<string, string>): Record<string, string> {
  let headers = previous;
  for (const [i, line] of text.replace(/\r/g, '').split('\n').entries()) {
    if (line.trim() === '') {
      if (headers !== previous) break;
      continue;
    }
    if (line.trimStart().startsWith('#') || (headers === previous && START_LINE.test(line.trim()))) continue;
    try {
      headers = withHeader(line, headers);
    } catch (error) {
      throw new InvalidArgumentError(`line ${i + 1} of ${source}: ${(error as Error).message}`);
    }
  }
  return headers;
}

function jsonHeaders(text: string, source: string, previous: Record<string, string>): Record<string, string> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw new InvalidArgumentError(`${source} is not JSON: ${(error as Error).message}.`);
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
    throw new InvalidArgumentError(`${source} must hold a JSON object of header names and values.`);
  }
  let headers = previous;
  for (const [name, given] of Object.entries(parsed)) {
    // Node gives a repeated header as an array; the verifier joins its values as it would.
    const values = Array.isArray(given) ? given : [given];
    if (!values.every((one) => typeof one === 'string')) {
      throw new InvalidArgumentError(`header ${name} in ${source}: expected a string (or strings).`);
    }
    try {
      headers = withHeader(`${name}: ${values.join(' ')}`, headers);
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
  if (value !== '-') return [...previous, value];
  const { bytes } = readAtFileBytes('@-', '--secret', 'the secrets', '-');
  const given = bytes.toString('utf8').split(/\s+/).filter(Boolean);
  if (given.length === 0) throw new InvalidArgumentError('no secret on standard input.');
  return [...previous, ...given];
}

export const SECRET_VARIABLE = 'COURIER_WEBHOOK_SECRET';

/** The --secret values, else COURIER_WEBHOOK_SECRET's (separated by white space), checked; errors never quote one. */
export function secretsGiven(given: string[] | undefined, env: NodeJS.ProcessEnv = process.env): Buffer[] {
  const source = given ? '--secret' : SECRET_VARIABLE;
  const texts = given ?? (env[SECRET_VARIABLE] ?? '').split(/\s+/).filter(Boolean);
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

/** commander parser for --at: a Unix time in seconds (as webhook-timestamp is) or an ISO 8601 time; in ms. */
export function instant(value: string): number {
  if (/^\d{1,15}$/.test(value.trim())) return Number(value.trim()) * 1000;
  try {
    return Date.parse(isoTime(value));
  } catch {
    throw new InvalidArgumentError(
      'expected a Unix time in seconds (1767225600) or an ISO 8601 time (2026-01-01T00:00:00Z).',
    );
  }
}

/** commander parser for sign's --timestamp: whole Unix seconds, as the header carries them. */
export function unixSeconds(value: string): number {
  if (!/^\d{1,15}$/.test(value)) throw new InvalidArgumentError('expected a Unix time in whole seconds.');
  return Number(value);
}

/** commander parser for sign's --id: printable ASCII without spaces, as a header value must be. */
export function webhookId(value: string): string {
  if (!/^[\x21-\x7e]{1,256}$/.test(value)) {
    throw new InvalidArgumentError('expected 1-256 printable ASCII characters without spaces.');
  }
  return value;
}
