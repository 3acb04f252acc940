import { readFile } from 'node:fs/promises';
import { ApiClient, type OperatorOptions } from '../api-client.ts';
import { usageError } from '../errors.ts';
import { output } from '../format.ts';
import { readAll } from '../input.ts';

export interface ImportOptions extends OperatorOptions {
  dryRun?: boolean;
  replaceAll?: boolean;
}

/** The API's answer (Svix's EventTypeImportOpenApiOut, with Courier's `archived`). */
interface ImportOut {
  data: { modified: string[]; to_modify: { name: string }[] | null; archived: string[] };
}

/**
 * `courier event-types import`: creates or updates an event type for each webhook of an OpenAPI
 * document (YAML or JSON), with Svix's import; the server reads and checks the document.
 */
export async function importEventTypes(file: string, options: ImportOptions) {
  const client = ApiClient.connect(options);
  let specRaw: string;
  try {
    specRaw = file === '-' ? await readAll(process.stdin) : await readFile(file, 'utf8');
  } catch (error) {
    throw usageError(`cannot read ${file}: ${(error as Error).message}`);
  }
  if (specRaw.trim() === '') throw usageError(`${file === '-' ? 'standard input' : file} is empty`);
  const { data } = await client.request<ImportOut>('POST', '/api/v1/event-type/import/openapi', {
    body: { specRaw, dryRun: options.dryRun === true, replaceAll: options.replaceAll === true },
  });
  const would = options.dryRun ? 'would be ' : '';
  const rows = [
    ...(data.to_modify ?? []).map((t) => ({ name: t.name, change: `${would}created or updated` })),
    ...data.archived.map((name) => ({ name, change: `${would}archived` })),
  ];
  output(
    options.json,
    data,
    [
      { header: 'EVENT TYPE', value: (r: (typeof rows)[number]) => r.name },
      { header: 'CHANGE', value: (r) => r.change },
    ],
    rows,
    'every event type already matches the document',
  );
}
