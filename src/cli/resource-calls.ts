/**
 * What the commands that make, change and remove things share (`apps`, `endpoints`,
 * `operational-endpoints`): an endpoint made and its signing secret shown, a secret printed, a
 * PATCH of the options given, a deletion, and what to say when an answer never came.
 */
import type { ApiClient } from './api-client.ts';
import { apiError, usageError } from './errors.ts';
import { idAndUid, printJson, printLines } from './format.ts';

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
  else printLines(`created ${idAndUid(made)}`, `signing secret: ${options.given ? GIVEN_SECRET : key}`);
}

/**
 * How the text output names a secret the operator gave: it may have come unseen, from a terminal
 * or a pipe, and a script's log would keep it. (One Courier made is printed: nobody has it yet.)
 */
export const GIVEN_SECRET = 'the one given (not shown)';

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

/** DELETE, then `deleted <name>` (or `{"deleted": name}`). */
export async function deleteNamed(
  client: ApiClient,
  path: string,
  name: string,
  json: boolean | undefined,
): Promise<void> {
  await client.request('DELETE', path);
  if (json) printJson({ deleted: name });
  else printLines(`deleted ${name}`);
}
