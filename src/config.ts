import { ConfigError } from './config-error.ts';
import { type ConfigSource, readConfigFile } from './config-file.ts';
import { OPTIONS } from './config-options.ts';
import { isProxyEntry, PROXY_RANGES } from './config-proxies.ts';
import { GuardSettingError } from './delivery/nat64.ts';
import { SsrfGuard } from './delivery/ssrf-guard.ts';
import { definePolicy, formatDuration, type PolicyOverrides, parseDuration } from './policy/index.ts';
import type { ClassifierMode, JitterMode } from './policy/types.ts';
import { MAX_IN_FLIGHT_MAX, RATE_LIMIT_MAX } from './setting-limits.ts';

/** Courier's settings, read from COURIER_* environment variables over an optional JSON file. */
export interface Config {
  databaseUrl: string | null;
  dataDir: string;
  schema: string;
  port: number;
  host: string;
  adminToken: string | null;
  /** Base64 of 32 bytes; null: a key generated once and kept in the database. */
  secretsKey: string | null;
  /** The configured key secretsKey replaces: it still opens what it sealed. */
  secretsKeyPrevious: string | null;
  retry: PolicyOverrides;
  requestTimeoutMs: number;
  /** COURIER_FILTER_TIMEOUT: how long a list that walks an application's messages may look. */
  filterTimeoutMs: number;
  leaseMs: number;
  maxInFlight: number;
  /** In-flight cap per receiving host, across its endpoints and all workers; 0: none. */
  maxInFlightPerHost: number;
  rateLimit: number;
  pauseAfter: number;
  /** COURIER_DISABLE_FAILING_AFTER; null: off. */
  disableFailingAfterMs: number | null;
  /** How long a message and its history are kept after its creation; null: for ever. */
  retentionMs: number | null;
  operatorWebhookUrl: string | null;
  /** COURIER_APP_PORTAL_URL: the app portal access link's template ({app_id}, {token}); null: unset. */
  appPortalUrl: string | null;
  /** COURIER_APP_PORTAL_FRAME_ANCESTORS: the origins that may frame /portal (a CSP source list); null: none. */
  appPortalFrameAncestors: string | null;
  allowPrivateNetworks: string[];
  /** COURIER_TRUST_PROXY: the proxies whose X-Forwarded-* headers the API believes (addresses, CIDRs, names); empty: none. */
  trustProxy: string[];
  /** Network-specific NAT64 prefixes the SSRF guard decodes, beside the well-known 64:ff9b::/96. */
  nat64Prefixes: string[];
  maxPayloadBytes: number;
  workerConcurrency: number;
  batchSize: number;
  logLevel: string;
  /**
   * COURIER_METRICS_PORT: where GET /metrics is answered; null: no metrics kept. `queue`
   * (COURIER_METRICS_QUEUE): whether the queue's figures are read from the database at each scrape.
   * `endpoints` (COURIER_METRICS_ENDPOINTS): how many endpoints get attempt series of their own.
   */
  metrics: { host: string; port: number; queue: boolean; endpoints: number } | null;
}

export { ConfigError };

class Reader {
  constructor(private readonly source: ConfigSource) {}

  raw(name: string): string {
    const value = this.source[name]?.trim();
    if (value !== undefined && value !== '') return value;
    return OPTIONS.find((o) => o.name === name)!.default;
  }

  optional(name: string): string | null {
    return this.raw(name) || null;
  }

  /** A duration, or null for `off`; `off` says what off means, for the error message. */
  durationOrOff(name: string, off: string): number | null {
    const text = this.raw(name);
    if (text === 'off') return null;
    try {
      return parseDuration(text);
    } catch (error) {
      throw new ConfigError(name, `${(error as Error).message}, or off ${off}`);
    }
  }

  duration(name: string): number {
    try {
      return parseDuration(this.raw(name));
    } catch (error) {
      throw new ConfigError(name, `${(error as Error).message} (use e.g. 500ms, 30s, 5m, 2h, 3d)`);
    }
  }

  int(name: string, min: number, max = Number.MAX_SAFE_INTEGER): number {
    const text = this.raw(name);
    const value = Number(text);
    if (!/^\d+$/.test(text) || value < min || value > max) {
      throw new ConfigError(name, `expected a whole number from ${min} to ${max}, got "${text}"`);
    }
    return value;
  }

  oneOf<T extends string>(name: string, choices: readonly T[]): T {
    const value = this.raw(name);
    if (!choices.includes(value as T))
      throw new ConfigError(name, `expected one of ${choices.join(', ')}, got "${value}"`);
    return value as T;
  }
}

function retryOverrides(r: Reader): PolicyOverrides {
  const jitter = r.oneOf<JitterMode>('COURIER_RETRY_JITTER', ['equal', 'full', 'none']);
  const schedule = r.optional('COURIER_RETRY_SCHEDULE');
  let backoff: PolicyOverrides['backoff'];
  if (schedule) {
    const scheduleMs = schedule.split(',').map((part) => {
      try {
        return parseDuration(part.trim());
      } catch (error) {
        throw new ConfigError('COURIER_RETRY_SCHEDULE', `${(error as Error).message} (e.g. 5s,5m,30m,2h)`);
      }
    });
    backoff = { kind: 'schedule', scheduleMs, jitter };
  } else {
    const baseMs = r.duration('COURIER_RETRY_BASE');
    const capMs = r.duration('COURIER_RETRY_CAP');
    if (baseMs <= 0) throw new ConfigError('COURIER_RETRY_BASE', 'must be greater than zero');
    if (capMs < baseMs)
      throw new ConfigError('COURIER_RETRY_CAP', 'must not be shorter than COURIER_RETRY_BASE');
    backoff = { kind: 'exponential', baseMs, capMs, jitter };
  }
  const overrides: PolicyOverrides = {
    classifier: { mode: r.oneOf<ClassifierMode>('COURIER_CLASSIFIER', ['strict', 'lenient']) },
    backoff,
    retryAfter: { ceilingMs: r.duration('COURIER_RETRY_AFTER_CEILING') },
    giveUp: {
      maxAttempts: r.int('COURIER_MAX_ATTEMPTS', 1, 1000),
      windowMs: r.duration('COURIER_RETRY_WINDOW'),
    },
  };
  try {
    definePolicy(overrides);
  } catch (error) {
    throw new ConfigError(
      policyVariable((error as Error).message, schedule !== null),
      (error as Error).message,
    );
  }
  return overrides;
}

/** An absolute http(s) URL once its placeholders are filled in: a link the API hands out as is. */
function appPortalUrl(r: Reader): string | null {
  const template = r.optional('COURIER_APP_PORTAL_URL');
  if (template === null) return null;
  let url: URL | null = null;
  try {
    url = new URL(template.replaceAll('{app_id}', 'app').replaceAll('{token}', 'token'));
  } catch {}
  if (url === null || (url.protocol !== 'https:' && url.protocol !== 'http:')) {
    throw new ConfigError('COURIER_APP_PORTAL_URL', `must be an absolute http or https URL, not ${template}`);
  }
  return template;
}

/** Origins (or 'self'), space-separated: each becomes a CSP frame-ancestors source as written. */
function appPortalFrameAncestors(r: Reader): string | null {
  const list = r.optional('COURIER_APP_PORTAL_FRAME_ANCESTORS');
  if (list === null) return null;
  const sources = list.split(/\s+/).filter(Boolean);
  // A wildcard covers the subdomains of a name of two labels at least: *.com would be every site.
  const origin =
    /^(?:'self'|https?:\/\/(?:\*\.[a-z0-9-]+\.[a-z0-9-]+(?:\.[a-z0-9-]+)*|[a-z0-9-]+(?:\.[a-z0-9-]+)*)(?::(?:[0-9]{1,5}|\*))?)$/i;
  const bad = sources.find((s) => !origin.test(s));
  if (bad !== undefined || sources.length === 0) {
    throw new ConfigError(
      'COURIER_APP_PORTAL_FRAME_ANCESTORS',
      `must be origins such as https://dashboard.example.com (or 'self'), space-separated, not ${bad ?? list}`,
    );
  }
  return sources.join(' ');
}

/** Addresses, CIDRs or range names, as Fastify's trustProxy takes them. */
function trustProxy(r: Reader): string[] {
  const entries = list(r, 'COURIER_TRUST_PROXY');
  const bad = entries.find((entry) => !isProxyEntry(entry));
  if (bad !== undefined) {
    throw new ConfigError(
      'COURIER_TRUST_PROXY',
      `must be addresses or CIDRs of the proxies (prefix 1 or more, 96 or more for a mapped IPv4 range; or ${PROXY_RANGES.join(', ')}), comma-separated, not ${bad}`,
    );
  }
  return entries;
}

/** Off, or an hour at least: a shorter run of failures is a receiver's restart, not a dead endpoint. */
function disableFailingAfter(r: Reader): number | null {
  const ms = r.durationOrOff('COURIER_DISABLE_FAILING_AFTER', 'never to disable one');
  if (ms !== null && ms < 3_600_000) {
    throw new ConfigError('COURIER_DISABLE_FAILING_AFTER', 'must be off or at least 1h');
  }
  return ms;
}

/** A dead letter stays visible for a day at least: retention within the retry window would delete it at once. */
function retention(r: Reader, windowMs: number): number | null {
  const retentionMs = r.durationOrOff('COURIER_RETENTION', 'to keep everything');
  const minimumMs = windowMs + 86_400_000;
  if (retentionMs !== null && retentionMs < minimumMs) {
    throw new ConfigError(
      'COURIER_RETENTION',
      `must be off or at least COURIER_RETRY_WINDOW plus a day (${formatDuration(minimumMs)}), ` +
        'so that a dead letter stays visible for a day at least',
    );
  }
  return retentionMs;
}

/** The variable a policy validation message (which names the policy's field) is about. */
function policyVariable(message: string, schedule: boolean): string {
  if (message.startsWith('giveUp.windowMs')) return 'COURIER_RETRY_WINDOW';
  if (message.startsWith('giveUp.maxAttempts')) return 'COURIER_MAX_ATTEMPTS';
  if (message.startsWith('retryAfter')) return 'COURIER_RETRY_AFTER_CEILING';
  if (message.startsWith('backoff.capMs')) return 'COURIER_RETRY_CAP';
  return schedule ? 'COURIER_RETRY_SCHEDULE' : 'COURIER_RETRY_BASE';
}

/** setTimeout's limit (about 24.8 days): a longer delay fires at once, and an interval every 1 ms. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * Kubernetes gives every pod a variable COURIER_PORT=tcp://<ip>:<port> for a Service named
 * courier: say so, rather than only that it is not a number.
 */
function port(r: Reader): number {
  const text = r.raw('COURIER_PORT');
  if (/^tcp:\/\//.test(text)) {
    throw new ConfigError(
      'COURIER_PORT',
      `got "${text}", a Kubernetes service link (a Service named courier): set COURIER_PORT to the port to listen on, or enableServiceLinks: false in the pod spec`,
    );
  }
  return r.int('COURIER_PORT', 0, 65535);
}

/** The variables, over the COURIER_CONFIG file's keys, over the defaults. */
function readerFor(env: ConfigSource): Reader {
  const filePath = env.COURIER_CONFIG?.trim();
  // An empty variable (compose passing `X=${UNSET}`) is unset: the file's value stands, not the default.
  const set = Object.fromEntries(Object.entries(env).filter(([, value]) => value?.trim()));
  return new Reader({ ...(filePath ? readConfigFile(filePath) : {}), ...set });
}

/** Where the API listens, as `courier serve` reads it: for the operator commands' default URL. */
export function listenAddress(env: ConfigSource = process.env): { host: string; port: number } {
  const r = readerFor(env);
  return { host: r.raw('COURIER_HOST'), port: port(r) };
}

/** The SSRF guard the settings describe: the API's URL check and the sender's connections share it. */
export function ssrfGuard(config: Pick<Config, 'allowPrivateNetworks' | 'nat64Prefixes'>): SsrfGuard {
  return new SsrfGuard(config.allowPrivateNetworks, config.nat64Prefixes);
}

function list(r: Reader, name: string): string[] {
  return (r.optional(name) ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
}

/** Reads and validates the configuration; a bad value throws a ConfigError naming its variable. */
export function loadConfig(env: ConfigSource = process.env): Config {
  const r = readerFor(env);

  const requestTimeoutMs = r.duration('COURIER_REQUEST_TIMEOUT');
  const leaseMs = r.duration('COURIER_LEASE');
  if (requestTimeoutMs <= 0) throw new ConfigError('COURIER_REQUEST_TIMEOUT', 'must be greater than zero');
  if (leaseMs > MAX_TIMER_MS) throw new ConfigError('COURIER_LEASE', 'must be at most 24 days');
  if (leaseMs <= requestTimeoutMs + 5_000) {
    throw new ConfigError(
      'COURIER_LEASE',
      'must exceed COURIER_REQUEST_TIMEOUT by more than 5s, or live workers would lose deliveries',
    );
  }
  const retry = retryOverrides(r);
  const retentionMs = retention(r, retry.giveUp!.windowMs!);
  const allowPrivateNetworks = list(r, 'COURIER_ALLOW_PRIVATE_NETWORKS');
  const nat64Prefixes = list(r, 'COURIER_NAT64_PREFIXES');
  let guard: SsrfGuard;
  try {
    guard = ssrfGuard({ allowPrivateNetworks, nat64Prefixes });
  } catch (error) {
    if (error instanceof GuardSettingError) throw new ConfigError(error.setting, error.detail);
    throw error;
  }
  const operatorWebhookUrl = r.optional('COURIER_OPERATOR_WEBHOOK_URL');
  // As the API checks an endpoint's URL: refused at delivery, every operational event would dead-letter.
  const operatorCheck = operatorWebhookUrl ? guard.checkUrl(operatorWebhookUrl) : { ok: true as const };
  if (!operatorCheck.ok) {
    const reason = operatorCheck.reason.replace(/^refused: /, '');
    throw new ConfigError('COURIER_OPERATOR_WEBHOOK_URL', `${reason} (see COURIER_ALLOW_PRIVATE_NETWORKS)`);
  }
  const schema = r.raw('COURIER_SCHEMA');
  if (!/^[a-z_][a-z0-9_]{0,40}$/.test(schema)) {
    throw new ConfigError('COURIER_SCHEMA', 'must be a lower-case SQL identifier of at most 41 characters');
  }
  const secretsKey = r.optional('COURIER_SECRETS_KEY');
  const secretsKeyPrevious = r.optional('COURIER_SECRETS_KEY_PREVIOUS');
  for (const [name, key] of [
    ['COURIER_SECRETS_KEY', secretsKey],
    ['COURIER_SECRETS_KEY_PREVIOUS', secretsKeyPrevious],
  ] as const) {
    if (key && Buffer.from(key, 'base64').length !== 32) {
      throw new ConfigError(name, 'must be base64 of 32 bytes (openssl rand -base64 32)');
    }
  }
  if (secretsKeyPrevious && !secretsKey) {
    throw new ConfigError(
      'COURIER_SECRETS_KEY_PREVIOUS',
      'is the key COURIER_SECRETS_KEY replaces: set that too',
    );
  }
  const adminToken = r.optional('COURIER_ADMIN_TOKEN');
  // A bearer token is one run of visible characters: one with a space could never be presented.
  if (adminToken && !/^[\x21-\x7e]{16,}$/.test(adminToken)) {
    throw new ConfigError('COURIER_ADMIN_TOKEN', 'must be at least 16 printable ASCII characters, no spaces');
  }

  const databaseUrl = r.optional('COURIER_DATABASE_URL');
  if (databaseUrl && !/^postgres(ql)?:\/\/[^/]/.test(databaseUrl)) {
    throw new ConfigError(
      'COURIER_DATABASE_URL',
      'must be a postgres:// or postgresql:// URL (postgres://user@host:5432/db)',
    );
  }

  return {
    databaseUrl,
    dataDir: r.raw('COURIER_DATA_DIR'),
    schema,
    port: port(r),
    host: r.raw('COURIER_HOST'),
    adminToken,
    secretsKey,
    secretsKeyPrevious,
    retry,
    requestTimeoutMs,
    filterTimeoutMs: r.duration('COURIER_FILTER_TIMEOUT'),
    leaseMs,
    maxInFlight: r.int('COURIER_MAX_IN_FLIGHT', 1, MAX_IN_FLIGHT_MAX),
    maxInFlightPerHost: r.int('COURIER_MAX_IN_FLIGHT_PER_HOST', 0, 100_000),
    rateLimit: r.int('COURIER_RATE_LIMIT', 1, RATE_LIMIT_MAX),
    pauseAfter: r.int('COURIER_PAUSE_AFTER', 1),
    disableFailingAfterMs: disableFailingAfter(r),
    retentionMs,
    operatorWebhookUrl,
    appPortalUrl: appPortalUrl(r),
    appPortalFrameAncestors: appPortalFrameAncestors(r),
    allowPrivateNetworks,
    trustProxy: trustProxy(r),
    nat64Prefixes,
    maxPayloadBytes: r.int('COURIER_MAX_PAYLOAD', 1024, 64 * 1024 * 1024),
    workerConcurrency: r.int('COURIER_WORKER_CONCURRENCY', 1, 100_000),
    batchSize: r.int('COURIER_BATCH_SIZE', 1, 10_000),
    logLevel: r.oneOf('COURIER_LOG_LEVEL', ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent']),
    metrics: metricsPort(r),
  };
}

/**
 * Five series each (one per result, and its info), and four for the rest: 10,004 a process at
 * most. A scrape formats them on the worker's thread, 14–27 µs an endpoint with the info read from
 * the database: 28–53 ms at 2,000, 159–241 ms at 10,000, more than the 100 ms beyond a claim's usual
 * time a claimed delivery may wait to leave (send-lag.ts) before it is given back.
 */
const MAX_ENDPOINT_SERIES = 2_000;

function metricsPort(r: Reader): Config['metrics'] {
  // Checked even without a port: a typo would otherwise surface only once metrics are turned on.
  const queue = r.oneOf('COURIER_METRICS_QUEUE', ['on', 'off']) === 'on';
  const endpoints = r.int('COURIER_METRICS_ENDPOINTS', 0, MAX_ENDPOINT_SERIES);
  if (r.optional('COURIER_METRICS_PORT') === null) return null;
  return {
    host: r.raw('COURIER_METRICS_HOST'),
    port: r.int('COURIER_METRICS_PORT', 0, 65535),
    queue,
    endpoints,
  };
}
