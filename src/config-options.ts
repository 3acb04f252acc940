/**
 * The settings Courier reads: each variable's name, default and meaning. The README's
 * configuration table is generated from this list; config.ts reads and checks the values.
 */
import { DEFAULT_BATCH_SIZE, DEFAULT_CONCURRENCY } from './dispatch/worker-options.ts';

export interface OptionSpec {
  name: string;
  default: string;
  description: string;
  /** A list: what separates its items, and joins a JSON array given for it in the COURIER_CONFIG file. */
  list?: ',' | ' ';
}

/** Every option, its default and meaning: the README's configuration table is generated from this. */
export const OPTIONS: readonly OptionSpec[] = [
  {
    name: 'COURIER_CONFIG',
    default: '',
    description:
      'Path of a JSON file of these same keys, a list given as a JSON array or as the variable writes it; environment variables override it.',
  },
  {
    name: 'COURIER_DATABASE_URL',
    default: '',
    description: 'PostgreSQL connection URL. Absent: embedded PGlite in COURIER_DATA_DIR (one process only).',
  },
  {
    name: 'COURIER_DATA_DIR',
    default: './data',
    description: 'Directory of the embedded database (and nothing else).',
  },
  { name: 'COURIER_SCHEMA', default: 'public', description: "PostgreSQL schema holding Courier's tables." },
  { name: 'COURIER_PORT', default: '8080', description: 'HTTP port of the API.' },
  {
    name: 'COURIER_HOST',
    default: '127.0.0.1',
    description: 'Interface the API listens on (set 0.0.0.0 in a container).',
  },
  {
    name: 'COURIER_ADMIN_TOKEN',
    default: '',
    description:
      "The admin API token, at least 16 printable ASCII characters, no spaces. When set, it is the only admin token accepted (a generated one stops working; applications' tokens work beside it). Absent: one is generated on first start, printed once, and stored hashed.",
  },
  {
    name: 'COURIER_SECRETS_KEY',
    default: '',
    description:
      'Base64 of 32 random bytes that encrypts signing secrets at rest (AES-256-GCM). Absent: a key generated on first start and kept in the database. A key that cannot open the secrets stored is refused at start; set where the generated key is in use, it takes over (see Running it for real).',
  },
  {
    name: 'COURIER_SECRETS_KEY_PREVIOUS',
    default: '',
    description:
      'When changing COURIER_SECRETS_KEY: the key it replaces. It still opens what it sealed, and the first start seals every secret again with the new key; drop it once every process has the new key.',
  },
  { name: 'COURIER_RETRY_BASE', default: '1m', description: 'First retry delay; doubles each retry.' },
  { name: 'COURIER_RETRY_CAP', default: '1h', description: 'Longest delay between two attempts.' },
  {
    name: 'COURIER_RETRY_JITTER',
    default: 'equal',
    description: 'equal (uniform in [d/2, d]), full ([0, d]) or none.',
  },
  {
    name: 'COURIER_RETRY_SCHEDULE',
    default: '',
    description: 'Explicit delays instead of doubling, e.g. 5s,5m,30m,2h (the last one repeats).',
    list: ',',
  },
  {
    name: 'COURIER_MAX_ATTEMPTS',
    default: '16',
    description: 'Attempts (the first included) before a delivery expires.',
  },
  {
    name: 'COURIER_RETRY_WINDOW',
    default: '72h',
    description: 'How long after its first attempt a delivery may still be retried.',
  },
  {
    name: 'COURIER_RETRY_AFTER_CEILING',
    default: '24h',
    description: 'Longest wait a Retry-After header may impose.',
  },
  {
    name: 'COURIER_CLASSIFIER',
    default: 'strict',
    description: 'strict (400/401/403/410/422 are permanent) or lenient (every 4xx is retried).',
  },
  {
    name: 'COURIER_REQUEST_TIMEOUT',
    default: '15s',
    description: 'Total time allowed for one attempt (connect, response, body).',
  },
  {
    name: 'COURIER_FILTER_TIMEOUT',
    default: '10s',
    description:
      "The longest a list that walks an application's messages (GET …/msg?status=, those standing somewhere as asked; GET …/endpoint/{endpoint_id}/msg, one endpoint's) looks before it answers 422 filter_timeout, so that such a list holds no database connection for longer. Not applied on PGlite.",
  },
  {
    name: 'COURIER_LEASE',
    default: '60s',
    description:
      'How long a claimed delivery stays with its worker; must exceed the request timeout by more than 5s.',
  },
  {
    name: 'COURIER_MAX_IN_FLIGHT',
    default: '10',
    description:
      "Cap of concurrent requests per endpoint, across all workers, given to an endpoint created without one (read by the API, not the workers; existing endpoints keep theirs). An application's token sets no more, or, while the endpoint's URL stays, no more than the admin token set for it (higher or lower) or than the endpoint has.",
  },
  {
    name: 'COURIER_MAX_IN_FLIGHT_PER_HOST',
    default: '0',
    description:
      "Cap of concurrent requests per receiving host (the URL's host and port), across its endpoints and all workers; 0: none. Read by each worker: set it alike on all.",
  },
  {
    name: 'COURIER_RATE_LIMIT',
    default: '1000',
    description:
      "Requests per second per endpoint, across all workers, given to an endpoint created without one when its application sets none (read by the API; existing endpoints keep theirs). An application's token sets no more than the endpoint's default (its application's rateLimit, else this), or, while the endpoint's URL stays, no more than the admin token set for it (higher or lower) or than the endpoint has.",
  },
  {
    name: 'COURIER_PAUSE_AFTER',
    default: '100',
    description: 'Consecutive permanent failures after which an endpoint is paused.',
  },
  {
    name: 'COURIER_DISABLE_FAILING_AFTER',
    default: '5d',
    description:
      'How long every attempt to an endpoint must have failed (any failure; no success, no day without a failure) ' +
      'before it is disabled, as Svix does: its deliveries held, new messages no longer stored for it, endpoint.disabled recorded (off: never). Read by each worker.',
  },
  {
    name: 'COURIER_RETENTION',
    default: '90d',
    description:
      'How long a message, its attempts and its dead letters are kept after it was published (off: for ever), and operational events and background tasks after they were recorded; ' +
      'at least COURIER_RETRY_WINDOW plus a day. Never while a delivery of the message is in flight or retrying.',
  },
  {
    name: 'COURIER_OPERATOR_WEBHOOK_URL',
    default: '',
    description:
      "An operational webhook endpoint (uid operator) made or moved at each worker's start: operational events (message.attempt.exhausted, .failing, .recovered; endpoint.paused, .created, .updated, .deleted, .disabled, .enabled; background_task.finished) are sent there, signed like any webhook, as to any made through the API. Checked like an endpoint URL: a private address, literal or resolved, needs COURIER_ALLOW_PRIVATE_NETWORKS (a literal one is refused at start, a host name at delivery).",
  },
  {
    name: 'COURIER_APP_PORTAL_URL',
    default: '',
    description:
      "The page an application's access link (POST /api/v1/auth/app-portal-access/{app_id}, its url) leads to, such as your dashboard's webhooks page: {app_id} and {token} in it are replaced, e.g. https://dashboard.example.com/webhooks#token={token}. Unset: the link opens this server's own app portal page, /portal, with the token after its #.",
  },
  {
    name: 'COURIER_TRUST_PROXY',
    default: '',
    description:
      'The proxies in front of the API (a load balancer, a TLS-terminating reverse proxy) whose X-Forwarded-Proto and X-Forwarded-Host it believes, comma-separated addresses or CIDRs, or loopback, linklocal, uniquelocal: e.g. 10.0.0.0/8. Each must set both headers (their last value counts), overwriting what a client sent: a request through one of them makes an access link with the public https address. Unset: no proxy is believed, and a link names the scheme and Host header the request reached Courier with.',
    list: ',',
  },
  {
    name: 'COURIER_APP_PORTAL_FRAME_ANCESTORS',
    default: '',
    description:
      "Origins that may show /portal in a frame, such as your dashboard's, space-separated: https://dashboard.example.com (or 'self'; https://*.example.com for its subdomains; a port may follow). Unset: no page may frame it.",
    list: ' ',
  },
  {
    name: 'COURIER_ALLOW_PRIVATE_NETWORKS',
    default: '',
    description:
      "Comma list of CIDRs deliveries may reach despite the SSRF guard, e.g. 127.0.0.0/8: for the operator's endpoints, not a public-only one (publicOnly: its URL set with an application's token, until the admin token opens it). An IPv4 entry covers its IPv4-mapped form, not its NAT64 one: 64:ff9b::a00:0/104 opens 10.0.0.0/8 through a NAT64 gateway.",
    list: ',',
  },
  {
    name: 'COURIER_NAT64_PREFIXES',
    default: '',
    description:
      "Comma list of network-specific NAT64 prefixes (RFC 6052: /32, /40, /48, /56, /64 or /96; not in a special-purpose range such as link-local, multicast, 6to4 or Teredo) whose addresses the SSRF guard judges by the IPv4 address they carry, as it always does those in 64:ff9b::/96; one with bits set that RFC 6052 keeps zero is refused. An IPv6 entry of COURIER_ALLOW_PRIVATE_NETWORKS opens part of one, bits 64–71 zero: 2001:db8:122:344:a::/80 opens 10.0.0.0/8 under 2001:db8:122:344::/64. Name your DNS64's prefix if it is another (`dig AAAA ipv4only.arpa` shows it, around 192.0.0.170): unnamed, its addresses are judged as IPv6 addresses, so in a global prefix one carrying an internal IPv4 address may pass.",
    list: ',',
  },
  {
    name: 'COURIER_MAX_PAYLOAD',
    default: '1048576',
    description: 'Largest accepted request body in bytes (413 above).',
  },
  {
    name: 'COURIER_WORKER_CONCURRENCY',
    default: String(DEFAULT_CONCURRENCY),
    description: 'Requests one worker process keeps in flight at once.',
  },
  {
    name: 'COURIER_BATCH_SIZE',
    default: String(DEFAULT_BATCH_SIZE),
    description: 'Deliveries claimed per database round trip.',
  },
  {
    name: 'COURIER_METRICS_PORT',
    default: '',
    description:
      "Port on which `courier serve` and `courier worker` answer GET /metrics for Prometheus (attempts by result and outcome, their durations, by endpoint with COURIER_METRICS_ENDPOINTS, the API's requests, requests in flight, how late the most overdue work is, process figures); 0: any free port, shown in the log. Absent: no metrics are kept.",
  },
  {
    name: 'COURIER_METRICS_HOST',
    default: '127.0.0.1',
    description: 'Interface the metrics port listens on (set 0.0.0.0 for a scraper in another container).',
  },
  {
    name: 'COURIER_METRICS_QUEUE',
    default: 'on',
    description:
      "on: this process's /metrics reads the queue's figures from the database at each scrape (courier_queue_lag_seconds, courier_queue_deliveries, courier_endpoints, courier_dead_letters); off: it does not. They are the same in every process on one database, and counting the deliveries and the dead letters costs the database more as they grow (62–83 ms and 56–72 ms on a slow host with a million scheduled and a million dead letters, once vacuumed): off in all but one process of a fleet.",
  },
  {
    name: 'COURIER_METRICS_ENDPOINTS',
    default: '0',
    description:
      'How many endpoints get attempt series of their own on /metrics (courier_endpoint_attempts_total{endpoint_id, result}, with courier_endpoint_info{endpoint_id, endpoint_uid, app_id, app_uid} read from the database at each scrape), 0 to 2000: so many at a time in a process, each given a place at its first attempt while one is free (shown at 0 in a scrape, then counting) until it is deleted or, while others wait for a place, goes an hour without an attempt; the rest add up under endpoint_id="other". 0: none. Each endpoint costs Prometheus five series per process, and a scrape 14–27 µs on the process\'s thread with its info (28–53 ms at 2000 on PostgreSQL).',
  },
  {
    name: 'COURIER_LOG_LEVEL',
    default: 'info',
    description: 'pino log level: trace, debug, info, warn, error, fatal, silent.',
  },
];

/** The README's configuration table (kept in step by scripts/readme-config.ts and a test). */
export function configTable(): string {
  const rows = OPTIONS.map(
    (o) => `| \`${o.name}\` | ${o.default ? `\`${o.default}\`` : '—'} | ${o.description} |`,
  );
  return ['| Variable | Default | Meaning |', '|---|---|---|', ...rows].join('\n');
}
