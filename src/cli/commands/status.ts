import { ApiClient, apiPath, type OperatorOptions } from '../api-client.ts';
import { orDash, output, timestamp } from '../format.ts';
import { standingWord } from '../message-columns.ts';

/** Svix's MessageEndpointOut, the fields shown; `attempts` is a Courier extension. */
interface DestinationOut {
  id: string;
  uid: string | null;
  url: string;
  statusText: string;
  nextAttempt: string | null;
  attempts?: number;
}

/** Where it stands, pending told apart as retrying once an attempt has failed (`attempts`). */
const standing = (d: DestinationOut): string =>
  d.statusText === 'pending' && (d.attempts ?? 0) > 0 ? 'retrying' : standingWord(d.statusText);

/** `courier status`: where one message stands at each endpoint it was sent to. */
export async function status(app: string, message: string, options: OperatorOptions) {
  const client = ApiClient.connect(options);
  const list = await client.list<DestinationOut>(apiPath('app', app, 'msg', message, 'endpoint'));
  output(
    options.json,
    list,
    [
      { header: 'ENDPOINT', value: (d: DestinationOut) => d.id },
      { header: 'UID', value: (d) => d.uid ?? '-' },
      { header: 'URL', value: (d) => d.url, max: 60 },
      { header: 'STATUS', value: standing },
      { header: 'ATTEMPTS', value: (d) => orDash(d.attempts), align: 'right' },
      { header: 'NEXT ATTEMPT', value: (d) => (d.nextAttempt ? timestamp(d.nextAttempt) : '-') },
    ],
    list,
    `message ${message} was sent to no endpoint`,
  );
}
