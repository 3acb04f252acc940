/**
 * `courier operational-endpoints`: Svix's operational webhook endpoints, where Courier sends what
 * operators should know (dead letters, endpoints paused or disabled, …).
 */
import { ApiClient, apiPath, type OperatorOptions } from '../api-client.ts';
import { output, printJson } from '../format.ts';

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
  const client = ApiClient.connect(options);
  const made = await client.request<OperationalEndpointOut>('POST', path(), {
    body: { url, uid: options.uid, filterTypes: options.filterType, description: options.description },
  });
  const { key } = await client.request<{ key: string }>('GET', path(made.id, 'secret'));
  if (options.json) printJson({ ...made, secret: key });
  else
    process.stdout.write(`created ${made.id}${made.uid ? ` (${made.uid})` : ''}\nsigning secret: ${key}\n`);
}

export async function removeOperationalEndpoint(endpoint: string, options: OperatorOptions) {
  await ApiClient.connect(options).request('DELETE', path(endpoint));
  if (options.json) printJson({ deleted: endpoint });
  else process.stdout.write(`deleted ${endpoint}\n`);
}

export async function operationalEndpointSecret(endpoint: string, options: OperatorOptions) {
  const { key } = await ApiClient.connect(options).request<{ key: string }>('GET', path(endpoint, 'secret'));
  if (options.json) printJson({ key });
  else process.stdout.write(`${key}\n`);
}
