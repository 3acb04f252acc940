/** `courier apps`: the applications (one per customer) whose endpoints Courier delivers to. */
import { ApiClient, apiPath, type OperatorOptions } from '../api-client.ts';
import { deleteNamed } from '../endpoint-calls.ts';
import { idAndUid, output, printJson, timestamp } from '../format.ts';

interface ApplicationOut {
  id: string;
  uid: string | null;
  name: string;
  rateLimit?: number | null;
  createdAt: string;
}

export interface AppsListOptions extends OperatorOptions {
  limit?: number;
}

/** Every application, oldest first (the API's order), or the first --limit. */
export async function listApps(options: AppsListOptions) {
  const list = await ApiClient.connect(options).list<ApplicationOut>(apiPath('app'), {}, options.limit);
  output(
    options.json,
    list,
    [
      { header: 'ID', value: (a: ApplicationOut) => a.id },
      { header: 'UID', value: (a) => a.uid ?? '-' },
      { header: 'NAME', value: (a) => a.name, max: 40 },
      { header: 'RATE LIMIT', value: (a) => (a.rateLimit ? `${a.rateLimit}/s` : '-'), align: 'right' },
      { header: 'CREATED', value: (a) => timestamp(a.createdAt) },
    ],
    list,
    'no applications',
  );
}

export interface AppCreateOptions extends OperatorOptions {
  uid?: string;
  rateLimit?: number;
  getIfExists?: boolean;
}

const UNANSWERED = 'it may have been created: `courier apps list` shows it';

/**
 * Creates one; with --get-if-exists an application already holding the uid is the answer (the
 * API's 200), so a provisioning script can run it again.
 */
export async function createApp(name: string, options: AppCreateOptions) {
  const { body: app, status } = await ApiClient.connect(options).exchange<ApplicationOut>(
    'POST',
    apiPath('app'),
    {
      query: { get_if_exists: options.getIfExists ? 'true' : undefined },
      body: { name, uid: options.uid, rateLimit: options.rateLimit },
      droppedHint: UNANSWERED,
      timeoutHint: UNANSWERED,
    },
  );
  if (options.json) printJson(app);
  else process.stdout.write(`${status === 200 ? 'exists' : 'created'} ${idAndUid(app)}\n`);
}

export async function deleteApp(app: string, options: OperatorOptions) {
  await deleteNamed(ApiClient.connect(options), apiPath('app', app), app, options.json);
}
