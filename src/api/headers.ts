/**
 * Custom headers an endpoint's deliveries carry. They end up in outgoing HTTP requests, so names
 * must be RFC 9110 tokens and values must not smuggle CR, LF or NUL (header injection); names
 * Courier sets itself (signatures, framing) cannot be overridden.
 */
import { CONNECTION_HEADERS } from '../delivery/connection-headers.ts';
import { fieldChecks, fieldError } from './errors.ts';

const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
// Visible ASCII, space, tab and obs-text; everything else (CR, LF, NUL, other controls) is refused.
const VALUE = /^[\t\x20-\x7e\x80-\xff]*$/;
const RESERVED = new Set(['content-type', 'content-length', 'host', 'user-agent']);
const RESERVED_PREFIXES = ['webhook-', 'svix-'];
export const MAX_HEADERS = 50;

export function isReservedHeader(name: string): boolean {
  const lower = name.toLowerCase();
  return (
    RESERVED.has(lower) || CONNECTION_HEADERS.has(lower) || RESERVED_PREFIXES.some((p) => lower.startsWith(p))
  );
}

/** Throws a 422 naming every bad header under `loc`, each with why. */
export function checkHeaders(headers: Record<string, string>, loc: string[]): void {
  const names = Object.keys(headers);
  if (names.length > MAX_HEADERS) throw fieldError(loc, `at most ${MAX_HEADERS} headers`);
  const refused = fieldChecks();
  const seen = new Set<string>();
  const refuse = (name: string, msg: string) => refused.refuse([...loc, name], msg);
  for (const name of names) {
    if (!TOKEN.test(name))
      refuse(name, "header name must be an HTTP token (letters, digits, !#$%&'*+-.^_`|~)");
    else if (CONNECTION_HEADERS.has(name.toLowerCase()))
      refuse(name, `header ${name} describes the connection, which Courier manages; it cannot be set`);
    else if (isReservedHeader(name))
      refuse(name, `header ${name} is set by Courier and cannot be overridden`);
    else if (seen.has(name.toLowerCase())) refuse(name, 'header given twice (names are case-insensitive)');
    else if (!VALUE.test(headers[name]!))
      refuse(
        name,
        'header value must not contain CR, LF, NUL, other control characters or non-Latin-1 characters',
      );
    seen.add(name.toLowerCase());
  }
  refused.done();
}

/** Applies a patch: `set` replaces headers of the same name whatever its case; `remove` deletes by name. */
export function patchHeaders(
  current: Record<string, string>,
  set: Record<string, string>,
  remove: readonly string[] = [],
): Record<string, string> {
  const drop = new Set([...Object.keys(set), ...remove].map((n) => n.toLowerCase()));
  const kept = Object.entries(current).filter(([name]) => !drop.has(name.toLowerCase()));
  return { ...Object.fromEntries(kept), ...set };
}

// As in Svix: credentials are never read back; GET lists their names under `sensitive`.
const SENSITIVE = new Set([
  'authorization',
  'proxy-authorization',
  'x-auth-token',
  'www-authenticate',
  'proxy-authenticate',
]);

export function withoutSensitive(headers: Record<string, string>): {
  headers: Record<string, string>;
  sensitive: string[];
} {
  const entries = Object.entries(headers);
  return {
    headers: Object.fromEntries(entries.filter(([name]) => !SENSITIVE.has(name.toLowerCase()))),
    sensitive: entries.filter(([name]) => SENSITIVE.has(name.toLowerCase())).map(([name]) => name),
  };
}
