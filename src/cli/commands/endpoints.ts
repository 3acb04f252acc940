import { ApiClient, apiPath, type OperatorOptions } from '../api-client.ts';
import { output } from '../format.ts';

interface EndpointOut {
  id: string;
  uid: string | null;
  url: string;
  disabled: boolean;
  status?: 'enabled' | 'disabled' | 'paused';
  disabledReason?: string | null;
  rateLimit?: number | null;
  maxInFlight?: number;
}

/** enabled, or `paused: <why>`; `status` is a Courier extension, `disabled` is Svix's. */
function statusOf(e: EndpointOut): string {
  const status = e.status ?? (e.disabled ? 'disabled' : 'enabled');
  const reason = e.disabledReason;
  if (!reason) return status;
  return reason.startsWith(status) ? reason : `${status}: ${reason}`; // not "disabled: disabled by its owner"
}

/** `courier endpoints`: every endpoint of an application, with its delivery status and limits. */
export async function endpoints(app: string, options: OperatorOptions) {
  const client = ApiClient.connect(options);
  const list = await client.list<EndpointOut>(apiPath('app', app, 'endpoint'), { limit: 250 });
  output(
    options.json,
    list,
    [
      { header: 'ID', value: (e: EndpointOut) => e.id },
      { header: 'UID', value: (e) => e.uid ?? '-' },
      { header: 'URL', value: (e) => e.url, max: 60 },
      { header: 'STATUS', value: statusOf, max: 60 },
      { header: 'MAX IN FLIGHT', value: (e) => String(e.maxInFlight ?? '-'), align: 'right' },
      { header: 'RATE LIMIT', value: (e) => (e.rateLimit ? `${e.rateLimit}/s` : '-'), align: 'right' },
    ],
    list,
    `no endpoints in application ${app}`,
  );
}
