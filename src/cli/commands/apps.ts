/** `courier apps`: the applications (one per customer) whose endpoints Courier delivers to. */
import { OPERATOR_APP_UID } from '../../dispatch/operator-uids.ts';
import { ApiClient, apiPath, MAX_PAGE, type OperatorOptions } from '../api-client.ts';
import { usageError } from '../errors.ts';
import {
  commandLine,
  endpointStatus,
  fieldLines,
  idAndUid,
  metadataText,
  orDash,
  output,
  overridesGiven,
  perSecond,
  printJson,
  printLines,
  timestamp,
} from '../format.ts';
import { createdHint, type DeleteOptions, deleteNamed, patchGiven, readable } from '../resource-calls.ts';
import { metadataGiven, orNull } from '../resource-input.ts';

interface ApplicationOut {
  id: string;
  uid: string | null;
  name: string;
  rateLimit?: number | null;
  retryPolicy?: Record<string, unknown> | null;
  metadata?: Record<string, string>;
  createdAt: string;
  updatedAt?: string;
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
      { header: 'RATE LIMIT', value: (a) => perSecond(a.rateLimit), align: 'right' },
      { header: 'CREATED', value: (a) => timestamp(a.createdAt) },
    ],
    list,
    'no applications',
  );
}

/** One application, field by field, with its endpoints counted (a page's worth); `--json`: the API's. */
export async function showApp(app: string, options: OperatorOptions) {
  const client = ApiClient.connect(options);
  const a = await client.request<ApplicationOut>('GET', apiPath('app', app));
  if (options.json) return printJson(a);
  const endpoints = await readable(
    client.list<EndpointStanding>(apiPath('app', a.id, 'endpoint'), {}, MAX_PAGE + 1),
  );
  printLines(
    ...fieldLines([
      ['id', a.id],
      ['uid', orDash(a.uid)],
      ['name', a.name],
      [
        'rate limit',
        a.rateLimit
          ? `${a.rateLimit}/s (endpoints made later start with it)`
          : 'none (endpoints made later take COURIER_RATE_LIMIT)',
      ],
      [
        'retry policy',
        overridesGiven(a.retryPolicy)
          ? `overrides for its endpoints ${JSON.stringify(a.retryPolicy)} (each endpoint's own apply over them)`
          : "no overrides (its endpoints follow the installation's policy and their own overrides)",
      ],
      ['endpoints', typeof endpoints === 'string' ? endpoints : endpointsLine(endpoints, a)],
      ['metadata', metadataText(a.metadata)],
      ['created', timestamp(a.createdAt)],
      ['updated', a.updatedAt ? timestamp(a.updatedAt) : '-'],
    ]),
  );
}

interface EndpointStanding {
  status?: string;
  disabled: boolean;
}

/**
 * How many endpoints, and how many of them are paused or disabled, with the command that lists
 * them; past one page, "more than", with the standings of that page's (the newest), rather than
 * walk every page.
 */
function endpointsLine(endpoints: EndpointStanding[], app: ApplicationOut): string {
  const operator = app.uid === OPERATOR_APP_UID;
  const name = app.uid ?? app.id;
  if (endpoints.length === 0) {
    const add = operator ? 'courier operational-endpoints add' : commandLine('courier endpoints add', name);
    return `none: \`${add} <url>\` adds one`;
  }
  const listed = `\`${operator ? 'courier operational-endpoints list' : commandLine('courier endpoints list', name)}\``;
  const page = endpoints.slice(0, MAX_PAGE);
  const notEnabled = ['paused', 'disabled']
    .map((status) => ({ status, n: page.filter((e) => endpointStatus(e) === status).length }))
    .filter(({ n }) => n > 0)
    .map(({ status, n }) => `${n} ${status}`)
    .join(', ');
  if (endpoints.length > MAX_PAGE) {
    return `more than ${MAX_PAGE}${notEnabled ? ` (${notEnabled} among the ${MAX_PAGE} newest)` : ''}: ${listed}`;
  }
  return `${endpoints.length}${notEnabled ? ` (${notEnabled})` : ''}: ${listed}`;
}

export interface AppCreateOptions extends OperatorOptions {
  uid?: string;
  rateLimit?: number;
  metadata?: Record<string, string>;
  retryPolicy?: Record<string, unknown>;
  getIfExists?: boolean;
}

/**
 * Creates one; with --get-if-exists an application already holding the --uid is the answer (the
 * API's 200), so a provisioning script can run it again. Without a uid there is nothing to find
 * (the API would make another each time): refused.
 */
export async function createApp(name: string, options: AppCreateOptions) {
  if (options.getIfExists && !options.uid) {
    throw usageError('--get-if-exists finds an application by its --uid: give one');
  }
  const hint = createdHint('courier apps list');
  const { body: app, status } = await ApiClient.connect(options).exchange<ApplicationOut>(
    'POST',
    apiPath('app'),
    {
      query: { get_if_exists: options.getIfExists ? 'true' : undefined },
      body: {
        name,
        uid: options.uid,
        rateLimit: options.rateLimit,
        metadata: options.metadata,
        retryPolicy: options.retryPolicy,
      },
      timeoutHint: hint,
      droppedHint: hint,
    },
  );
  const existed = status === 200;
  if (options.json) {
    printJson(app);
    // On stderr, as send's repeat is: stdout stays the application alone.
    if (existed) process.stderr.write(`courier: nothing was created: ${idAndUid(app)} has this uid\n`);
  } else printLines(`${existed ? 'exists' : 'created'} ${idAndUid(app)}`);
}

export interface AppUpdateOptions extends OperatorOptions {
  name?: string;
  uid?: string;
  rateLimit?: number | 'default';
  metadata?: Record<string, string>;
  clearMetadata?: boolean;
  clearUid?: boolean;
  retryPolicy?: Record<string, unknown> | 'default';
}

/**
 * A PATCH of what was given. The rate limit is its endpoints' default: endpoints made later take
 * it, an existing one keeps its own; `default` removes it (COURIER_RATE_LIMIT is the default then).
 */
export async function updateApp(app: string, options: AppUpdateOptions) {
  const fields = {
    name: options.name,
    uid: options.clearUid ? null : options.uid,
    rateLimit: orNull(options.rateLimit),
    metadata: metadataGiven(options),
    retryPolicy: orNull(options.retryPolicy),
  };
  await patchGiven(ApiClient.connect(options), apiPath('app', app), fields, {
    json: options.json,
    listCommand: 'courier apps list',
  });
}

export async function deleteApp(app: string, options: DeleteOptions & OperatorOptions) {
  await deleteNamed(ApiClient.connect(options), (name) => apiPath('app', name), app, {
    ...options,
    describe: (a) =>
      `application ${a.name}, ${idAndUid(a)}, and its endpoints` +
      (a.uid === OPERATOR_APP_UID
        ? ' (the operational webhook endpoints: operational events then go nowhere until one is added,' +
          ' or a worker starts with COURIER_OPERATOR_WEBHOOK_URL)'
        : ''),
  });
}
