/**
 * `courier operational-endpoints`: Svix's operational webhook endpoints, where Courier sends what
 * operators should know (dead letters, endpoints paused or disabled, …).
 */
import { ApiClient, apiPath, type OperatorOptions } from '../api-client.ts';
import { changeHeaders, type HeadersOptions } from '../endpoint-headers.ts';
import { idAndUid, output } from '../format.ts';
import { createWithSecret, type DeleteOptions, deleteNamed, printSecret } from '../resource-calls.ts';
import { type RotateOptions, rotateSecret } from '../secret-rotation.ts';

interface OperationalEndpointOut {
  id: string;
  uid: string | null;
  url: string;
  disabled: boolean;
  status?: string;
  disabledReason?: string | null;
  filterTypes?: string[] | null;
  description: string;
}

export interface AddOptions extends OperatorOptions {
  uid?: string;
  filterType?: string[];
  description?: string;
  metadata?: Record<string, string>;
}

const path = (...rest: string[]) => apiPath('operational-webhook', 'endpoint', ...rest);

export async function listOperationalEndpoints(options: OperatorOptions) {
  const list = await ApiClient.connect(options).list<OperationalEndpointOut>(path());
  output(
    options.json,
    list,
    [
      { header: 'ENDPOINT', value: (e) => e.id },
      { header: 'UID', value: (e) => e.uid ?? '-' },
      { header: 'URL', value: (e) => e.url, max: 60 },
      {
        header: 'STATUS',
        value: (e) => e.disabledReason ?? e.status ?? (e.disabled ? 'disabled' : 'enabled'),
        max: 60,
      },
      { header: 'EVENT TYPES', value: (e) => e.filterTypes?.join(', ') || 'all' },
    ],
    list,
    'no operational webhook endpoints',
  );
}

/** Creates one and prints it with its signing secret, which its receiver verifies with. */
export async function addOperationalEndpoint(url: string, options: AddOptions) {
  const body = {
    url,
    uid: options.uid,
    filterTypes: options.filterType,
    description: options.description,
    metadata: options.metadata,
  };
  await createWithSecret(ApiClient.connect(options), path, body, {
    json: options.json,
    listCommand: 'courier operational-endpoints list',
    secretCommand: (id) => `courier operational-endpoints secret ${id}`,
  });
}

export async function removeOperationalEndpoint(endpoint: string, options: DeleteOptions & OperatorOptions) {
  await deleteNamed(ApiClient.connect(options), path, endpoint, {
    ...options,
    describe: (e) => `operational endpoint ${idAndUid(e)}, ${e.url}`,
  });
}

export async function operationalEndpointSecret(endpoint: string, options: OperatorOptions) {
  await printSecret(ApiClient.connect(options), path, endpoint, options.json);
}

export async function operationalEndpointHeaders(endpoint: string, options: HeadersOptions) {
  await changeHeaders(path, endpoint, options);
}

export async function rotateOperationalEndpointSecret(endpoint: string, options: RotateOptions) {
  await rotateSecret(path, endpoint, `courier operational-endpoints rotate-secret ${endpoint}`, options);
}
