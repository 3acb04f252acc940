/**
 * What `courier endpoints` and `courier operational-endpoints` both do with one endpoint: make it
 * and show its signing secret, print that secret. `at` builds the paths of its collection (an
 * application's endpoints, or the operational webhook's).
 */
import type { ApiClient } from './api-client.ts';
import { idAndUid, printJson } from './format.ts';

export type PathOf = (...rest: string[]) => string;

/** Creates one, then reads the secret its receiver verifies signatures with. */
export async function createWithSecret(
  client: ApiClient,
  at: PathOf,
  body: unknown,
  json: boolean | undefined,
  unansweredHint: string,
): Promise<void> {
  const made = await client.request<{ id: string; uid: string | null }>('POST', at(), {
    body,
    timeoutHint: unansweredHint,
    droppedHint: unansweredHint,
  });
  const { key } = await client.request<{ key: string }>('GET', at(made.id, 'secret'));
  if (json) printJson({ ...made, secret: key });
  else process.stdout.write(`created ${idAndUid(made)}\nsigning secret: ${key}\n`);
}

export async function printSecret(
  client: ApiClient,
  at: PathOf,
  endpoint: string,
  json: boolean | undefined,
): Promise<void> {
  const { key } = await client.request<{ key: string }>('GET', at(endpoint, 'secret'));
  if (json) printJson({ key });
  else process.stdout.write(`${key}\n`);
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
  else process.stdout.write(`deleted ${name}\n`);
}
