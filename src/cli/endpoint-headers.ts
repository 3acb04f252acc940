/**
 * `courier endpoints headers` and `courier operational-endpoints headers`: the headers an
 * endpoint's deliveries carry, printed and changed.
 */
import { ApiClient, type OperatorOptions } from './api-client.ts';
import { usageError } from './errors.ts';
import { printJson, printLines } from './format.ts';
import type { PathOf } from './resource-calls.ts';

export interface HeadersOptions extends OperatorOptions {
  header?: Record<string, string>;
  remove?: string[];
  /** Replace them all with --header's (none: remove every one). */
  clear?: boolean;
}

export interface HeadersOut {
  headers: Record<string, string>;
  /** Credentials (Authorization, X-Auth-Token, …): their names alone, as in Svix. */
  sensitive: string[];
}

const lower = (names: Iterable<string>) => new Set([...names].map((n) => n.toLowerCase()));

/**
 * Prints them, after the change asked for: --header adds or replaces (a PATCH), --remove deletes,
 * --clear replaces the lot (a PUT). On stderr: a --remove naming no header, and what --clear
 * removed (a credential's value cannot be read back, so its loss is said).
 */
export async function changeHeaders(at: PathOf, endpoint: string, options: HeadersOptions) {
  const client = ApiClient.connect(options);
  const path = at(endpoint, 'headers');
  const set = options.header ?? {};
  const remove = options.remove ?? [];
  const both = remove.filter((name) => lower(Object.keys(set)).has(name.toLowerCase()));
  if (both.length > 0) throw usageError(`header ${both[0]} both given and removed`);

  // Said once the change is made: a refused one removed nothing.
  const said: string[] = [];
  if (options.clear || remove.length > 0) {
    const before = await client.request<HeadersOut>('GET', path);
    if (options.clear) {
      const kept = lower(Object.keys(set));
      const gone = (names: string[]) => names.filter((n) => !kept.has(n.toLowerCase()));
      said.push(...gone(Object.keys(before.headers)).map((name) => `removed ${name}`));
      said.push(
        ...gone(before.sensitive).map(
          (name) => `removed ${name} (a credential: its value cannot be read back)`,
        ),
      );
    } else {
      const present = lower([...Object.keys(before.headers), ...before.sensitive]);
      said.push(
        ...remove
          .filter((n) => !present.has(n.toLowerCase()))
          .map((name) => `${endpoint} has no header ${name} to remove`),
      );
    }
  }
  if (options.clear) await client.request('PUT', path, { body: { headers: set } });
  else if (remove.length > 0 || Object.keys(set).length > 0) {
    await client.request('PATCH', path, { body: { headers: set, deleteHeaders: remove } });
  }
  for (const line of said) process.stderr.write(`courier: ${line}\n`);

  const now = await client.request<HeadersOut>('GET', path);
  if (options.json) printJson(now);
  else {
    const lines = headerEntries(now).map(
      ([name, value]) => `${name}: ${value ?? '(set; a credential, not shown)'}`,
    );
    printLines(...(lines.length > 0 ? lines : [`${endpoint} sends no headers of its own`]));
  }
}

/** Every header by name, in any case's order; a credential's value null (the API never sends it). */
export function headerEntries({ headers, sensitive }: HeadersOut): [string, string | null][] {
  return [...Object.entries(headers), ...sensitive.map((name): [string, null] => [name, null])].sort(
    ([a], [b]) => a.toLowerCase().localeCompare(b.toLowerCase()),
  );
}
