/**
 * What the commands that make, change and remove things share (`apps`, `endpoints`,
 * `operational-endpoints`): an endpoint made and its signing secret shown, a secret printed, a
 * PATCH of the options given, a deletion, and what to say when an answer never came.
 */
import type { ApiClient } from './api-client.ts';
import { apiError, CliError, usageError } from './errors.ts';
import { idAndUid, printable, printJson, printLines } from './format.ts';
import { confirmed, isTerminal } from './terminal-input.ts';

export type PathOf = (...rest: string[]) => string;

/** The advice for a creation or change left unanswered (a timeout, a dropped connection): it may have happened. */
export const createdHint = (listCommand: string, done = 'created'): string =>
  `it may have been ${done}: \`${listCommand}\` shows it`;

/**
 * Creates an endpoint, then reads the secret its receiver verifies signatures with. Made but its
 * secret unread (a restart between the two), it says what was made and how to read the secret,
 * so a repeat does not make a second endpoint.
 */
export async function createWithSecret(
  client: ApiClient,
  at: PathOf,
  body: unknown,
  options: {
    json?: boolean;
    listCommand: string;
    secretCommand: (id: string) => string;
    /** The secret the operator gave, in the API's form: not read back, and printed by --json alone. */
    given?: string;
  },
): Promise<void> {
  const hint = createdHint(options.listCommand);
  const made = await client.request<{ id: string; uid: string | null }>('POST', at(), {
    body,
    timeoutHint: hint,
    droppedHint: hint,
  });
  let key = options.given;
  if (key === undefined) {
    try {
      ({ key } = await client.request<{ key: string }>('GET', at(made.id, 'secret')));
    } catch (error) {
      if (!options.json) printLines(`created ${idAndUid(made)}`);
      const why = error instanceof Error ? error.message : String(error);
      throw apiError(
        `${made.id} was created, but its secret could not be read (${why}); \`${options.secretCommand(made.id)}\` prints it`,
      );
    }
  }
  if (options.json) printJson({ ...made, secret: key });
  else printLines(`created ${idAndUid(made)}`, `signing secret: ${shownSecret(key, options.given)}`);
}

/**
 * A secret as the text output shows it: one Courier made, printed (nobody has it yet); one the
 * operator gave, not (it may have come unseen, from a terminal or a pipe, and a log would keep it).
 */
export const shownSecret = (key: string, given: string | undefined): string =>
  given === undefined ? key : 'the one given (not shown)';

export async function printSecret(
  client: ApiClient,
  at: PathOf,
  endpoint: string,
  json: boolean | undefined,
): Promise<void> {
  const { key } = await client.request<{ key: string }>('GET', at(endpoint, 'secret'));
  if (json) printJson({ key });
  else printLines(key);
}

/**
 * A PATCH of the fields given (the API keeps what is absent), then `updated <id> (<uid>)` or the
 * JSON answer; nothing given is refused before anything is sent.
 */
export async function patchGiven(
  client: ApiClient,
  path: string,
  fields: Record<string, unknown>,
  options: { json?: boolean; listCommand: string },
): Promise<void> {
  const body = Object.fromEntries(Object.entries(fields).filter(([, value]) => value !== undefined));
  if (Object.keys(body).length === 0) throw usageError('nothing to change: give at least one option');
  // A rename that went through makes a repeat a 404: say where to look.
  const hint = createdHint(options.listCommand, 'changed');
  const changed = await client.request<{ id: string; uid: string | null }>('PATCH', path, {
    body,
    timeoutHint: hint,
    droppedHint: hint,
  });
  if (options.json) printJson(changed);
  else printLines(`updated ${idAndUid(changed)}`);
}

export interface DeleteOptions {
  json?: boolean;
  /** Delete without asking, at a terminal too. */
  yes?: boolean;
}

/**
 * DELETE of what `at(name)` names, then `deleted <name>` (or `{"deleted": name}`). When a person
 * is there to answer (standard input and stderr terminals), unless --yes, it reads it first and
 * asks, naming it (`describe`), then deletes that one by its id: a uid could name another by the
 * time of the answer.
 */
export async function deleteNamed(
  client: ApiClient,
  at: (name: string) => string,
  name: string,
  options: DeleteOptions & { describe: (found: Named) => string },
  stdin: NodeJS.ReadableStream = process.stdin,
  prompt: NodeJS.WritableStream = process.stderr,
): Promise<void> {
  let path = at(name);
  if (!options.yes && isTerminal(stdin) && isTerminal(prompt)) {
    const found = await client.request<Named>('GET', path);
    // What the server sent made printable: a name or a URL may hold escape sequences.
    if (!(await confirmed(printable(`delete ${options.describe(found)}?`), stdin, prompt))) {
      throw new CliError('nothing deleted', 1);
    }
    path = at(found.id);
  }
  await client.request('DELETE', path);
  if (options.json) printJson({ deleted: name });
  else printLines(`deleted ${name}`);
}

/** What a deletion's question names: an application or an endpoint, as the API answers it. */
export interface Named {
  id: string;
  uid: string | null;
  name?: string;
  url?: string;
}

/**
 * A part of `show` read apart: one another capability guards (an application's token without
 * ManageEndpoint), one an older server lacks, or one that failed, said so in its place.
 */
export async function readable<T>(read: Promise<T>): Promise<T | string> {
  try {
    return await read;
  } catch (error) {
    if (!(error instanceof CliError)) throw error;
    if (error.apiCode === 'forbidden') return 'not readable with this token';
    if (error.apiCode === 'not_found' || error.apiCode === 'not_implemented')
      return 'not available from this server';
    return `unavailable: ${error.message}`;
  }
}
