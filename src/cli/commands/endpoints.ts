/**
 * `courier endpoints`: an application's endpoints, listed, shown, added, updated, paused, resumed
 * and removed; their secrets printed and rotated, their retry policy printed.
 */
import { ApiClient, apiPath, type OperatorOptions } from '../api-client.ts';
import { changeHeaders, type HeadersOptions, type HeadersOut, headerEntries } from '../endpoint-headers.ts';
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
import { type StandingCounts, standingColumns, standingsText } from '../message-columns.ts';
import { type EndpointPolicyOut, policyLines } from '../policy-lines.ts';
import {
  createWithSecret,
  type DeleteOptions,
  deleteNamed,
  patchGiven,
  printSecret,
  readable,
} from '../resource-calls.ts';
import { metadataGiven, orNull, secretGiven } from '../resource-input.ts';
import { type RotateOptions, rotateSecret } from '../secret-rotation.ts';

interface EndpointOut {
  id: string;
  uid: string | null;
  url: string;
  disabled: boolean;
  status?: 'enabled' | 'disabled' | 'paused';
  disabledReason?: string | null;
  rateLimit?: number | null;
  maxInFlight?: number;
  /** Courier extension (forty-fifth session): an older server sends none. */
  publicOnly?: boolean;
  retryAfterUntil?: string | null;
  failingSince?: string | null;
  /** Courier extension (sixty-fourth session): an older server sends none. */
  heldByOperator?: boolean;
  /** Courier extensions (sixty-fifth session): an older server sends none. */
  operatorRateLimit?: number | null;
  operatorMaxInFlight?: number | null;
}

/** The fields `endpoints show` adds to the list's. */
interface EndpointDetail extends EndpointOut {
  description: string;
  filterTypes: string[] | null;
  channels: string[] | null;
  retryPolicy: Record<string, unknown> | null;
  metadata: Record<string, string>;
  createdAt: string;
  updatedAt: string;
}

const endpointsOf =
  (app: string) =>
  (...rest: string[]) =>
    apiPath('app', app, 'endpoint', ...rest);

/**
 * enabled, or `paused: <why>` (and whether the operator holds it, which an application's token
 * cannot end), the start of its failures when every attempt fails, and a wait its receiver asked
 * for that has not ended by `now`; `status`, `heldByOperator`, `failingSince` and `retryAfterUntil`
 * are Courier extensions, `disabled` is Svix's.
 */
function statusOf(e: EndpointOut, now: number): string {
  const status = endpointStatus(e);
  const reason = e.disabledReason;
  // not "disabled: disabled by its owner"
  let stated = !reason ? status : reason.startsWith(status) ? reason : `${status}: ${reason}`;
  if (e.heldByOperator) stated += '; held by the operator';
  if (status === 'enabled' && e.failingSince) stated += `; failing since ${timestamp(e.failingSince)}`;
  const until = e.retryAfterUntil;
  return until && Date.parse(until) > now ? `${stated}; Retry-After until ${timestamp(until)}` : stated;
}

/** A setting with the bound the operator set for the URL, which an application's token stays within. */
const withOperators = (
  value: number | null | undefined,
  operators: number | null | undefined,
  show: (n: number | null | undefined) => string,
): string =>
  operators === null || operators === undefined
    ? show(value)
    : `${show(value)} (the operator's bound for this URL: ${show(operators)})`;

/** `-` where an older server sends no publicOnly. */
const publicOnlyText = (e: EndpointOut): string =>
  e.publicOnly === undefined ? '-' : e.publicOnly ? 'yes' : 'no';

/** Stats requests at once: an application may have hundreds of endpoints. */
const STATS_CONCURRENCY = 8;

async function statsOf(client: ApiClient, app: string, list: readonly EndpointOut[]) {
  const stats: StandingCounts[] = [];
  for (let i = 0; i < list.length; i += STATS_CONCURRENCY) {
    const batch = list.slice(i, i + STATS_CONCURRENCY);
    stats.push(
      ...(await Promise.all(
        batch.map((e) => client.request<StandingCounts>('GET', endpointsOf(app)(e.id, 'stats'))),
      )),
    );
  }
  return list.map((e, i) => ({ ...e, stats: stats[i]! }));
}

/** With --stats, Svix's EndpointStats: its messages of the last 28 days, by where they stand. */
type Listed = EndpointOut & { stats?: StandingCounts };

/**
 * `courier endpoints`: every endpoint of an application, with its delivery status and limits; with
 * --stats also how its messages of the last 28 days stand (one stats request per endpoint).
 */
export async function endpoints(app: string, options: OperatorOptions & { stats?: boolean }) {
  const client = ApiClient.connect(options);
  const endpoints = await client.list<EndpointOut>(endpointsOf(app)(), {
    order: 'ascending',
  });
  const list: Listed[] = options.stats ? await statsOf(client, app, endpoints) : endpoints;
  const now = Date.now();
  output(
    options.json,
    list,
    [
      { header: 'ID', value: (e: Listed) => e.id },
      { header: 'UID', value: (e) => e.uid ?? '-' },
      { header: 'URL', value: (e) => e.url, max: 60 },
      { header: 'STATUS', value: (e) => statusOf(e, now), max: 60 },
      { header: 'MAX IN FLIGHT', value: (e) => String(e.maxInFlight ?? '-'), align: 'right' },
      { header: 'RATE LIMIT', value: (e) => perSecond(e.rateLimit), align: 'right' },
      // COURIER_ALLOW_PRIVATE_NETWORKS does not apply to a public-only endpoint.
      { header: 'PUBLIC ONLY', value: publicOnlyText },
      ...(options.stats ? standingColumns((e: Listed) => e.stats) : []),
    ],
    list,
    `no endpoints in application ${app}`,
  );
}

export interface EndpointAddOptions extends OperatorOptions {
  uid?: string;
  eventType?: string[];
  channel?: string[];
  description?: string;
  rateLimit?: number;
  maxInFlight?: number;
  header?: Record<string, string>;
  secret?: string;
  publicOnly?: boolean;
  metadata?: Record<string, string>;
  retryPolicy?: Record<string, unknown>;
}

/** Creates one and prints its signing secret: one Courier made (one given, with --json alone). */
export async function addEndpoint(app: string, url: string, options: EndpointAddOptions) {
  // Connected first: a missing token is said before a secret is typed.
  const client = ApiClient.connect(options);
  const secret = await secretGiven(options.secret);
  const body = {
    url,
    uid: options.uid,
    filterTypes: options.eventType,
    channels: options.channel,
    description: options.description,
    rateLimit: options.rateLimit,
    maxInFlight: options.maxInFlight,
    headers: options.header,
    secret,
    publicOnly: options.publicOnly,
    metadata: options.metadata,
    retryPolicy: options.retryPolicy,
  };
  await createWithSecret(client, endpointsOf(app), body, {
    json: options.json,
    listCommand: `courier endpoints list ${app}`,
    secretCommand: (id) => `courier endpoints secret ${app} ${id}`,
    given: secret,
  });
}

export interface UpdateOptions extends OperatorOptions {
  newUrl?: string;
  uid?: string;
  eventType?: string[];
  allEventTypes?: boolean;
  channel?: string[];
  allChannels?: boolean;
  description?: string;
  rateLimit?: number | 'default';
  maxInFlight?: number | 'default';
  publicOnly?: boolean;
  metadata?: Record<string, string>;
  clearMetadata?: boolean;
  clearUid?: boolean;
  retryPolicy?: Record<string, unknown> | 'default';
}

/**
 * A PATCH of what was given: the API keeps what is absent and sets a limit sent as null to the
 * current default. A new URL from the admin token clears publicOnly unless sent: it is sent as the
 * endpoint has it, so moving a customer's public-only endpoint does not open private networks to it.
 */
export async function updateEndpoint(app: string, endpoint: string, options: UpdateOptions) {
  const client = ApiClient.connect(options);
  let { publicOnly } = options;
  if (options.newUrl !== undefined && publicOnly === undefined) {
    ({ publicOnly } = await client.request<EndpointOut>('GET', endpointsOf(app)(endpoint)));
  }
  const fields = {
    url: options.newUrl,
    uid: options.clearUid ? null : options.uid,
    filterTypes: options.allEventTypes ? null : options.eventType,
    channels: options.allChannels ? null : options.channel,
    description: options.description,
    // `default`, the API's null, sets the current default: the application's rate limit, else
    // COURIER_RATE_LIMIT; COURIER_MAX_IN_FLIGHT.
    rateLimit: orNull(options.rateLimit),
    maxInFlight: orNull(options.maxInFlight),
    publicOnly,
    metadata: metadataGiven(options),
    retryPolicy: orNull(options.retryPolicy),
  };
  await patchGiven(client, endpointsOf(app)(endpoint), fields, {
    json: options.json,
    listCommand: `courier endpoints list ${app}`,
  });
}

/** pause or resume (Courier's routes: a pause holds deliveries until resumed), then where it stands. */
export async function changeStatus(
  action: 'pause' | 'resume',
  app: string,
  endpoint: string,
  options: OperatorOptions,
) {
  const path = endpointsOf(app)(endpoint, action);
  const changed = await ApiClient.connect(options).request<EndpointOut>('POST', path);
  if (options.json) printJson(changed);
  else printLines(`${idAndUid(changed)}: ${statusOf(changed, Date.now())}`);
}

export async function removeEndpoint(
  app: string,
  endpoint: string,
  options: DeleteOptions & OperatorOptions,
) {
  await deleteNamed(ApiClient.connect(options), endpointsOf(app), endpoint, {
    ...options,
    describe: (e) => `endpoint ${idAndUid(e)} of ${app}, ${e.url}`,
  });
}

export async function endpointSecret(app: string, endpoint: string, options: OperatorOptions) {
  await printSecret(ApiClient.connect(options), endpointsOf(app), endpoint, options.json);
}

/**
 * One endpoint, field by field: what the list shows and its filters, headers (names), retry
 * policy overrides, metadata and the last 28 days' standings. `--json`: the API's endpoint alone.
 */
export async function showEndpoint(app: string, endpoint: string, options: OperatorOptions) {
  const client = ApiClient.connect(options);
  const e = await client.request<EndpointDetail>('GET', endpointsOf(app)(endpoint));
  if (options.json) return printJson(e);
  const [headers, stats] = await Promise.all([
    readable(client.request<HeadersOut>('GET', endpointsOf(app)(e.id, 'headers'))),
    readable(client.request<StandingCounts>('GET', endpointsOf(app)(e.id, 'stats'))),
  ]);
  const hint = (command: string) => `\`${commandLine(`courier endpoints ${command}`, app, e.uid ?? e.id)}\``;
  printLines(
    ...fieldLines([
      ['id', e.id],
      ['uid', orDash(e.uid)],
      ['url', e.url],
      ['description', orDash(e.description)],
      ['status', statusOf(e, Date.now())],
      ['event types', e.filterTypes?.join(', ') ?? 'all'],
      ['channels', e.channels?.join(', ') ?? 'all'],
      ['rate limit', withOperators(e.rateLimit, e.operatorRateLimit, perSecond)],
      ['max in flight', withOperators(e.maxInFlight, e.operatorMaxInFlight, orDash)],
      ['public only', publicOnlyText(e)],
      [
        'headers',
        typeof headers === 'string' ? headers : `${headerNames(headers)} (values: ${hint('headers')})`,
      ],
      ['secret', `${hint('secret')} prints it`],
      [
        'retry policy',
        `${overridesGiven(e.retryPolicy) ? `its own overrides ${JSON.stringify(e.retryPolicy)}` : 'no overrides of its own'} (the policy it follows: ${hint('policy')})`,
      ],
      ['metadata', metadataText(e.metadata)],
      ['last 28 days', typeof stats === 'string' ? stats : standingsText(stats)],
      ['created', timestamp(e.createdAt)],
      ['updated', timestamp(e.updatedAt)],
    ]),
  );
}

const headerNames = (out: HeadersOut): string => {
  const entries = headerEntries(out);
  return entries.length === 0
    ? 'none'
    : entries.map(([name, value]) => (value === null ? `${name} (a credential)` : name)).join(', ');
};

/** The retry policy its deliveries follow (the API's, over this server's configuration), in words. */
export async function endpointPolicy(app: string, endpoint: string, options: OperatorOptions) {
  const client = ApiClient.connect(options);
  const out = await client.request<EndpointPolicyOut>('GET', endpointsOf(app)(endpoint, 'retry-policy'));
  if (options.json) printJson(out);
  else printLines(...policyLines(out));
}

export async function endpointHeaders(app: string, endpoint: string, options: HeadersOptions) {
  await changeHeaders(endpointsOf(app), endpoint, options);
}

export async function rotateEndpointSecret(app: string, endpoint: string, options: RotateOptions) {
  await rotateSecret(
    endpointsOf(app),
    endpoint,
    `courier endpoints rotate-secret ${app} ${endpoint}`,
    options,
  );
}
