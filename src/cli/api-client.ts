/**
 * The operator commands' HTTP client for a running Courier: bearer auth, JSON both ways, the
 * API's `{code, detail}` errors turned into one readable line, and list pagination.
 */
import { listenAddress } from '../config.ts';
import { apiError, usageError } from './errors.ts';

/**
 * Where `courier serve` listens with the same settings (COURIER_HOST, COURIER_PORT, COURIER_CONFIG):
 * a wildcard address is reached on loopback.
 */
export function defaultUrl(env: NodeJS.ProcessEnv): string {
  let address: { host: string; port: number };
  try {
    address = listenAddress(env);
  } catch (error) {
    throw usageError(`${(error as Error).message}; or give the API's address with --url or COURIER_URL`);
  }
  if (address.port === 0) {
    throw usageError(
      'COURIER_PORT is 0 (serve takes any free port): give its address with --url or COURIER_URL',
    );
  }
  const host = address.host === '0.0.0.0' ? '127.0.0.1' : address.host === '::' ? '::1' : address.host;
  return `http://${host.includes(':') ? `[${host}]` : host}:${address.port}`;
}
const TIMEOUT_MS = 60_000;

/** `--url` and `--token` as commander parsed them (absent: from the environment). */
export interface ConnectionOptions {
  url?: string;
  token?: string;
}

export type Query = Record<string, string | number | readonly string[] | undefined>;

/** Svix's list envelope. */
export interface ListPage<T> {
  data: T[];
  iterator: string | null;
  done: boolean;
}

/**
 * `/api/v1/` + the segments, each percent-encoded (uids may hold dots and dashes, never slashes).
 * `.` and `..` are refused: URL parsing would resolve them, even encoded, to another route.
 */
export const apiPath = (...segments: string[]): string => {
  const dotted = segments.find((s) => s === '.' || s === '..');
  if (dotted !== undefined) throw usageError(`"${dotted}" cannot name an application, endpoint or message`);
  return `/api/v1/${segments.map(encodeURIComponent).join('/')}`;
};

export class ApiClient {
  readonly url: string;

  constructor(
    url: string,
    private readonly token: string,
  ) {
    this.url = url.replace(/\/+$/, '');
  }

  /** The flags first, then COURIER_URL / COURIER_TOKEN / COURIER_ADMIN_TOKEN, then where serve listens. */
  static connect(options: ConnectionOptions, env: NodeJS.ProcessEnv = process.env): ApiClient {
    // An empty COURIER_URL counts as unset, as the token's variables do.
    const source = options.url !== undefined ? '--url' : env.COURIER_URL ? 'COURIER_URL' : null;
    // The address `courier serve` prints for the API ends in /api/v1: the paths add their own.
    const url = (options.url ?? (env.COURIER_URL || defaultUrl(env))).replace(/\/api\/v1\/*$/, '');
    let parsed: URL | undefined;
    try {
      parsed = new URL(url);
    } catch {}
    if (!parsed || (parsed.protocol !== 'http:' && parsed.protocol !== 'https:')) {
      throw usageError(`invalid ${source ?? 'URL'} ${JSON.stringify(url)}: expected http(s)://host:port`);
    }
    if (parsed.username || parsed.password) {
      throw usageError(
        `invalid ${source ?? 'URL'}: credentials in the URL are not used; pass the token with --token`,
      );
    }
    // Empty variables count as unset: `COURIER_TOKEN= courier …` should not send "Bearer ".
    const token = options.token || env.COURIER_TOKEN || env.COURIER_ADMIN_TOKEN;
    if (!token) {
      throw usageError(
        'no API token: set COURIER_TOKEN (or COURIER_ADMIN_TOKEN), or pass --token; ' +
          '`courier serve` prints the admin token on its first start',
      );
    }
    // fetch refuses such a header before sending anything, which read as "cannot reach Courier".
    if (!/^[\x21-\x7e]+$/.test(token)) {
      throw usageError('the API token must be printable ASCII without spaces (a pasted character?)');
    }
    return new ApiClient(url, token);
  }

  /** The answer's JSON body; a failure, a timeout or an answer that is not Courier's throws. */
  async request<T>(method: string, path: string, options: RequestOptions = {}): Promise<T> {
    return (await this.exchange<T>(method, path, options)).body;
  }

  /** request, with the answer's headers. */
  async exchange<T>(
    method: string,
    path: string,
    options: RequestOptions = {},
  ): Promise<{ body: T; headers: Headers; status: number }> {
    const timeoutMs = options.timeoutMs ?? TIMEOUT_MS;
    const target = this.url + path + queryString(options.query);
    // Set over the caller's, whatever case it wrote them in.
    const headers = new Headers(options.headers);
    headers.set('authorization', `Bearer ${this.token}`);
    headers.set('accept', 'application/json');
    if (options.body !== undefined) headers.set('content-type', 'application/json');
    let response: Response;
    let text: string;
    try {
      response = await fetch(target, {
        method,
        headers,
        body: options.body === undefined ? undefined : JSON.stringify(options.body),
        signal: AbortSignal.timeout(timeoutMs),
      });
      // The body can be cut off, or late, as the headers can.
      text = await response.text();
    } catch (error) {
      throw apiError(this.unreachable(error, timeoutMs, options));
    }
    const json = parseJson(text);
    if (!response.ok) {
      // A refusal stored under an idempotency key, answered again: it may no longer hold.
      const replayed = response.headers.get('idempotent-replayed') === 'true';
      const { code } = (json ?? {}) as { code?: unknown };
      throw apiError(
        describeFailure(response, json) +
          (replayed ? ' (the first answer to this idempotency key, replayed)' : ''),
        typeof code === 'string' ? code : undefined,
      );
    }
    if (json === undefined && text !== '') {
      throw apiError(`${this.url} answered HTTP ${response.status} without JSON: is it Courier?`);
    }
    return { body: json as T, headers: response.headers, status: response.status };
  }

  /**
   * The items of a list, all of them or the first `max`, walking `iterator` until `done`; each page
   * asks for no more than is still wanted, and at most `query.limit` (the API's largest by default).
   */
  async list<T>(path: string, query: Query = {}, max = Number.POSITIVE_INFINITY): Promise<T[]> {
    const items: T[] = [];
    if (max <= 0) return items;
    const pageSize = Number(query.limit ?? MAX_PAGE);
    let iterator: string | undefined;
    for (;;) {
      const limit = Math.min(pageSize, max - items.length);
      const page = await this.request<ListPage<T>>('GET', path, { query: { ...query, limit, iterator } });
      items.push(...page.data);
      // A page without an iterator cannot lead further, whatever `done` says.
      if (items.length >= max || page.done || !page.iterator || page.data.length === 0) {
        return items.slice(0, max);
      }
      iterator = page.iterator;
    }
  }

  private unreachable(error: unknown, timeoutMs: number, options: RequestOptions): string {
    const e = error as { name?: string; message?: string; cause?: { code?: string; message?: string } };
    const hinted = (what: string, hint?: string) => (hint ? `${what}; ${hint}` : what);
    if (e.name === 'TimeoutError') {
      return hinted(
        `Courier at ${this.url} did not answer within ${timeoutMs / 1000} s`,
        options.timeoutHint,
      );
    }
    const code = e.cause?.code;
    if (code === 'ECONNREFUSED') return `cannot reach Courier at ${this.url}: is it running?`;
    if (code !== undefined && CLOSED_MIDWAY.has(code)) {
      return hinted(
        `the connection to Courier at ${this.url} closed before its answer (${e.cause?.message})`,
        options.droppedHint,
      );
    }
    const why = code === 'ENOTFOUND' ? 'unknown host' : (e.cause?.message ?? e.message ?? String(error));
    return `cannot reach Courier at ${this.url}: ${why}`;
  }
}

function queryString(query: Query | undefined): string {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(query ?? {})) {
    if (value === undefined) continue;
    for (const v of Array.isArray(value) ? value : [value]) params.append(key, String(v));
  }
  const text = params.toString();
  return text ? `?${text}` : '';
}

function parseJson(text: string): unknown {
  if (text === '') return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

interface ValidationItem {
  loc?: string[];
  msg?: string;
}

/** `<detail> (<code>, HTTP <status>)`; a 422's field list becomes `body.url: must …; …`. */
function describeFailure(response: Response, json: unknown): string {
  const { code, detail } = (json ?? {}) as { code?: unknown; detail?: unknown };
  let text: string | undefined;
  if (typeof detail === 'string') text = detail;
  else if (Array.isArray(detail)) {
    text = (detail as ValidationItem[])
      .map((item) => `${item.loc?.join('.') ?? '?'}: ${item.msg ?? 'is invalid'}`)
      .join('; ');
  }
  if (text === undefined || typeof code !== 'string') {
    return `HTTP ${response.status} ${response.statusText} from ${response.url}`.trim();
  }
  return `${text} (${code}, HTTP ${response.status})`;
}

interface RequestOptions {
  query?: Query;
  body?: unknown;
  headers?: Record<string, string>;
  timeoutMs?: number;
  /** What to tell the operator when the answer does not come in time. */
  timeoutHint?: string;
  /** What to tell the operator when the connection closes before the answer: the request may have been acted on. */
  droppedHint?: string;
}

/** The API's largest page (`limit`; MAX_LIMIT in src/api/pagination.ts, which loads the schema library). */
export const MAX_PAGE = 250;

/** Errors of a connection that closed once open, perhaps after the request had gone (a restart, a proxy's timeout). */
const CLOSED_MIDWAY = new Set(['UND_ERR_SOCKET', 'ECONNRESET', 'EPIPE']);

/** The options every operator command takes. */
export interface OperatorOptions extends ConnectionOptions {
  json?: boolean;
}
