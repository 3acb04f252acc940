import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { withConfigTable } from '../scripts/readme-config.ts';
import { ConfigError, loadConfig, ssrfGuard } from '../src/config.ts';
import { OPTIONS } from '../src/config-options.ts';

describe('configuration', () => {
  it('has documented defaults matching the issue', () => {
    const config = loadConfig({});
    expect(config).toMatchObject({
      databaseUrl: null,
      dataDir: './data',
      port: 8080,
      maxInFlight: 10,
      maxInFlightPerHost: 0,
      pauseAfter: 100,
      retentionMs: 90 * 86_400_000,
      requestTimeoutMs: 15_000,
      allowPrivateNetworks: [],
      nat64Prefixes: [],
      retry: {
        backoff: { kind: 'exponential', baseMs: 60_000, capMs: 3_600_000, jitter: 'equal' },
        giveUp: { maxAttempts: 16, windowMs: 72 * 3_600_000 },
      },
    });
  });

  it('reads durations, lists and schedules', () => {
    const config = loadConfig({
      COURIER_RETRY_SCHEDULE: '5s, 5m,30m,2h',
      COURIER_RETRY_JITTER: 'full',
      COURIER_REQUEST_TIMEOUT: '1500ms',
      COURIER_RETRY_WINDOW: '3d',
      COURIER_ALLOW_PRIVATE_NETWORKS: '127.0.0.0/8, ::1/128',
    });
    expect(config.retry.backoff).toEqual({
      kind: 'schedule',
      scheduleMs: [5_000, 300_000, 1_800_000, 7_200_000],
      jitter: 'full',
    });
    expect(config.requestTimeoutMs).toBe(1_500);
    expect(config.retry.giveUp?.windowMs).toBe(3 * 86_400_000);
    expect(config.allowPrivateNetworks).toEqual(['127.0.0.0/8', '::1/128']);
  });

  it('reads a per-host in-flight cap, 0 meaning none', () => {
    expect(loadConfig({ COURIER_MAX_IN_FLIGHT_PER_HOST: '20' }).maxInFlightPerHost).toBe(20);
    expect(loadConfig({ COURIER_MAX_IN_FLIGHT_PER_HOST: '0' }).maxInFlightPerHost).toBe(0);
  });

  it('disables an endpoint failing for 5 days by default, after another time, or never', () => {
    expect(loadConfig({}).disableFailingAfterMs).toBe(5 * 86_400_000);
    expect(loadConfig({ COURIER_DISABLE_FAILING_AFTER: '36h' }).disableFailingAfterMs).toBe(36 * 3_600_000);
    expect(loadConfig({ COURIER_DISABLE_FAILING_AFTER: 'off' }).disableFailingAfterMs).toBeNull();
    expect(() => loadConfig({ COURIER_DISABLE_FAILING_AFTER: '30m' })).toThrow(
      /^COURIER_DISABLE_FAILING_AFTER: must be off or at least 1h$/,
    );
    expect(() => loadConfig({ COURIER_DISABLE_FAILING_AFTER: 'soon' })).toThrow(
      /or off never to disable one$/,
    );
  });

  it('names a Kubernetes service link given as COURIER_PORT', () => {
    expect(() => loadConfig({ COURIER_PORT: 'tcp://10.96.12.34:8080' })).toThrow(
      /COURIER_PORT.*a Kubernetes service link.*enableServiceLinks: false/,
    );
  });

  it.each([
    ['COURIER_PORT', 'eighty'],
    ['COURIER_PORT', '70000'],
    ['COURIER_RETRY_BASE', '10 minutes'],
    ['COURIER_RETRY_CAP', '1s'],
    ['COURIER_RETRY_JITTER', 'some'],
    ['COURIER_RETRY_SCHEDULE', '5s,soon'],
    ['COURIER_MAX_ATTEMPTS', '0'],
    ['COURIER_RETRY_WINDOW', '-1h'],
    ['COURIER_REQUEST_TIMEOUT', 'fast'],
    ['COURIER_LEASE', '10s'],
    ['COURIER_MAX_IN_FLIGHT', '0'],
    ['COURIER_MAX_IN_FLIGHT_PER_HOST', '-1'],
    ['COURIER_MAX_IN_FLIGHT_PER_HOST', 'ten'],
    ['COURIER_RATE_LIMIT', '1.5'],
    ['COURIER_ALLOW_PRIVATE_NETWORKS', '10.0.0.0/99'],
    ['COURIER_NAT64_PREFIXES', '2001:db8::/33'],
    ['COURIER_NAT64_PREFIXES', '64:ff9b::/32'], // overlaps the well-known prefix
    ['COURIER_OPERATOR_WEBHOOK_URL', 'ftp://x'],
    // Refused at delivery by the SSRF guard, every operational event would be dead-lettered.
    ['COURIER_OPERATOR_WEBHOOK_URL', 'http://10.0.0.5/hook'],
    ['COURIER_OPERATOR_WEBHOOK_URL', 'https://user:pw@alerts.example/hook'],
    ['COURIER_OPERATOR_WEBHOOK_URL', 'http://host:8o80/'],
    ['COURIER_APP_PORTAL_URL', 'dashboard.example.com/webhooks#token={token}'],
    ['COURIER_APP_PORTAL_URL', 'javascript:alert({token})'],
    ['COURIER_APP_PORTAL_FRAME_ANCESTORS', 'https://a.example; script-src *'],
    ['COURIER_APP_PORTAL_FRAME_ANCESTORS', 'https://a.example,https://b.example'],
    ['COURIER_APP_PORTAL_FRAME_ANCESTORS', "'unsafe-inline'"],
    ['COURIER_APP_PORTAL_FRAME_ANCESTORS', '*'],
    ['COURIER_APP_PORTAL_FRAME_ANCESTORS', 'https://*.com'],
    ['COURIER_TRUST_PROXY', '10.0.0.0/99'],
    ['COURIER_TRUST_PROXY', 'proxy.internal'],
    ['COURIER_TRUST_PROXY', '0.0.0.0/0'], // every client
    ['COURIER_TRUST_PROXY', '::/0'],
    ['COURIER_TRUST_PROXY', '10/8'], // 0.0.0.0/8 to an IPv4 parser
    ['COURIER_TRUST_PROXY', '010.0.0.1'], // 8.0.0.1 to an IPv4 parser
    ['COURIER_TRUST_PROXY', '::ffff:10.0.0.0/8'], // matches no one
    ['COURIER_TRUST_PROXY', '10.0.0.0/255.0.0.0'],
    ['COURIER_ADMIN_TOKEN', 'short'],
    ['COURIER_ADMIN_TOKEN', 'correct horse battery staple'],
    ['COURIER_SCHEMA', 'Robert; drop table'],
    ['COURIER_SECRETS_KEY', 'c2hvcnQ='],
    ['COURIER_SECRETS_KEY_PREVIOUS', 'c2hvcnQ='],
    // The key it was replaced by is missing.
    ['COURIER_SECRETS_KEY_PREVIOUS', Buffer.alloc(32, 1).toString('base64')],
    ['COURIER_RETRY_WINDOW', '36600d'],
    ['COURIER_RETENTION', 'never'],
    ['COURIER_DISABLE_FAILING_AFTER', 'never'],
    ['COURIER_DISABLE_FAILING_AFTER', '59m'],
    ['COURIER_RETENTION', '30m'],
    ['COURIER_RETENTION', '3d'], // the 72h retry window, without the day a dead letter stays
    ['COURIER_RETRY_AFTER_CEILING', '36600d'],
    ['COURIER_RETRY_SCHEDULE', '5s,0s'],
    ['COURIER_LEASE', '200d'],
    ['COURIER_DATABASE_URL', 'notaurl'],
    ['COURIER_METRICS_QUEUE', 'no'],
    ['COURIER_METRICS_ENDPOINTS', '2001'],
    ['COURIER_METRICS_ENDPOINTS', 'all'],
  ])('a bad %s (%s) stops start-up with a message naming it', (name, value) => {
    expect(() => loadConfig({ [name]: value })).toThrow(ConfigError);
    expect(() => loadConfig({ [name]: value })).toThrow(new RegExp(`^${name}: `));
  });

  it('takes the proxies whose forwarded headers the API believes, and none by default', () => {
    expect(
      loadConfig({
        COURIER_TRUST_PROXY: '10.0.0.0/8, loopback,::1, 192.168.1.7,fd00::/8,::ffff:10.0.0.0/104',
      }).trustProxy,
    ).toEqual(['10.0.0.0/8', 'loopback', '::1', '192.168.1.7', 'fd00::/8', '::ffff:10.0.0.0/104']);
    expect(loadConfig({}).trustProxy).toEqual([]);
  });

  it('takes an app portal link with its placeholders, and none', () => {
    const template = 'https://dashboard.example.com/{app_id}/webhooks#token={token}';
    expect(loadConfig({ COURIER_APP_PORTAL_URL: template }).appPortalUrl).toBe(template);
    expect(loadConfig({}).appPortalUrl).toBeNull();
  });

  it('takes the origins that may frame the portal page, as a CSP source list', () => {
    const list = "https://dashboard.example.com https://*.example.org:8443 'self' http://localhost:3000";
    expect(loadConfig({ COURIER_APP_PORTAL_FRAME_ANCESTORS: ` ${list} ` }).appPortalFrameAncestors).toBe(
      list,
    );
    expect(loadConfig({}).appPortalFrameAncestors).toBeNull();
  });

  it('keeps history for ever with COURIER_RETENTION=off, and a day beyond the retry window at least', () => {
    expect(loadConfig({ COURIER_RETENTION: 'off' }).retentionMs).toBeNull();
    const eightDays = loadConfig({ COURIER_RETENTION: '8d', COURIER_RETRY_WINDOW: '7d' });
    expect(eightDays.retentionMs).toBe(8 * 86_400_000);
    expect(() => loadConfig({ COURIER_RETENTION: '7d', COURIER_RETRY_WINDOW: '7d' })).toThrow(
      /^COURIER_RETENTION: must be off or at least COURIER_RETRY_WINDOW plus a day \(8d\)/,
    );
    expect(() => loadConfig({ COURIER_RETENTION: 'never' })).toThrow(/or off to keep everything/);
  });

  it('gives the SSRF guard its NAT64 prefixes: the operator URL and ssrfGuard(config) judge by them', () => {
    const prefixes = { COURIER_NAT64_PREFIXES: ' 2a00:1450:64::/96 , 64:ff9b:1:fffe::/96' };
    const internal = { COURIER_OPERATOR_WEBHOOK_URL: 'http://[2a00:1450:64::a00:5]/ops' };
    expect(loadConfig(prefixes).nat64Prefixes).toEqual(['2a00:1450:64::/96', '64:ff9b:1:fffe::/96']);
    expect(loadConfig(internal).operatorWebhookUrl).toBe(internal.COURIER_OPERATOR_WEBHOOK_URL);
    expect(() => loadConfig({ ...internal, ...prefixes })).toThrow(
      /^COURIER_OPERATOR_WEBHOOK_URL: \[?2a00:1450:64::a00:5\]? is the NAT64 form \(in 2a00:1450:64::\/96\) of 10\.0\.0\.5/,
    );
    expect(ssrfGuard(loadConfig(prefixes)).checkAddress('64:ff9b:1:fffe::a9fe:a9fe')).toMatchObject({
      reason: expect.stringContaining('(in 64:ff9b:1:fffe::/96) of 169.254.169.254'),
    });
    expect(ssrfGuard(loadConfig(prefixes)).checkAddress('64:ff9b:1:fffe::808:808')).toEqual({ ok: true });
  });

  it('takes an operator URL on a private network once COURIER_ALLOW_PRIVATE_NETWORKS allows it', () => {
    const env = { COURIER_OPERATOR_WEBHOOK_URL: 'http://127.0.0.1:9000/ops' };
    expect(() => loadConfig(env)).toThrow(/COURIER_ALLOW_PRIVATE_NETWORKS/);
    const config = loadConfig({ ...env, COURIER_ALLOW_PRIVATE_NETWORKS: '127.0.0.0/8' });
    expect(config.operatorWebhookUrl).toBe('http://127.0.0.1:9000/ops');
  });

  it("leaves the config file's value where a variable is set empty", () => {
    const dir = mkdtempSync(join(tmpdir(), 'courier-config-'));
    try {
      const file = join(dir, 'courier.json');
      writeFileSync(
        file,
        JSON.stringify({ COURIER_DATABASE_URL: 'postgres://db.internal/courier', COURIER_PORT: 8181 }),
      );
      const config = loadConfig({ COURIER_CONFIG: file, COURIER_DATABASE_URL: '', COURIER_PORT: ' ' });
      expect(config.databaseUrl).toBe('postgres://db.internal/courier');
      expect(config.port).toBe(8181);
      expect(loadConfig({ COURIER_CONFIG: file, COURIER_PORT: '9090' }).port).toBe(9090);
    } finally {
      rmSync(dir, { recursive: true });
    }
  });

  it('takes a list in the config file as a JSON array, joined as each variable is written', () => {
    const dir = mkdtempSync(join(tmpdir(), 'courier-config-'));
    try {
      const file = join(dir, 'courier.json');
      writeFileSync(
        file,
        JSON.stringify({
          COURIER_APP_PORTAL_FRAME_ANCESTORS: ['https://dashboard.example.com', "'self'"],
          COURIER_ALLOW_PRIVATE_NETWORKS: ['10.0.0.0/8', '127.0.0.0/8'],
        }),
      );
      const config = loadConfig({ COURIER_CONFIG: file });
      expect(config.appPortalFrameAncestors).toBe("https://dashboard.example.com 'self'");
      expect(config.allowPrivateNetworks).toEqual(['10.0.0.0/8', '127.0.0.0/8']);
      // What is not such a list, or a list where none is, is refused with the file and the key named.
      const refused = (content: Record<string, unknown>) => {
        writeFileSync(file, JSON.stringify(content));
        return () => loadConfig({ COURIER_CONFIG: file });
      };
      expect(refused({ COURIER_ALLOW_PRIVATE_NETWORKS: [{ cidr: '10.0.0.0/8' }] })).toThrow(
        `COURIER_ALLOW_PRIVATE_NETWORKS: ${file}: a list of strings, not one holding {"cidr":"10.0.0.0/8"}`,
      );
      expect(refused({ COURIER_TRUST_PROXY: [['10.0.0.0/8']] })).toThrow(
        /COURIER_TRUST_PROXY: .* not one holding \["10/,
      );
      expect(refused({ COURIER_RETRY_SCHEDULE: ['5s', 5000] })).toThrow(
        /COURIER_RETRY_SCHEDULE: .* not one holding 5000$/,
      );
      expect(refused({ COURIER_PORT: [8080] })).toThrow(
        `COURIER_PORT: ${file}: expected a string, number or boolean, not [8080]`,
      );
      expect(refused({ COURIER_APP_PORTAL_FRAME_ANCESTORS: null })).toThrow(
        `COURIER_APP_PORTAL_FRAME_ANCESTORS: ${file}: expected a string or a JSON array of strings, not null`,
      );
    } finally {
      rmSync(dir, { recursive: true });
    }
  });

  it('refuses unknown keys in the config file', () => {
    expect(() => loadConfig({ COURIER_CONFIG: '/nonexistent/courier.json' })).toThrow(/COURIER_CONFIG/);
  });

  it('documents every option in the README table', () => {
    const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
    expect(withConfigTable(readme)).toBe(readme);
    for (const option of OPTIONS) expect(readme).toContain(`\`${option.name}\``);
  });
});
