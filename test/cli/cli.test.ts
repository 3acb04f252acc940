/**
 * The operator commands end to end: the real `courier` binary (a child process) against a real API
 * on PostgreSQL, with deliveries driven by a worker on virtual time to a loopback receiver.
 */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closedPort, type Receiver, startRawReceiver, startReceiver } from '../delivery/receiver.ts';
import { createApp, createEndpoint, startApi, type TestApi, TOKEN } from '../e2e/support.ts';
import { virtualWorker } from '../support/engine.ts';
import { runCli } from './run.ts';

describe('courier operator commands', () => {
  let api: TestApi;
  let receiver: Receiver;
  let engine: ReturnType<typeof virtualWorker>;
  let endpointId: string;
  let gone = true; // the /gone receiver answers 410 (permanent: a dead letter at once) until healed
  const cli = (args: string[], env: Record<string, string> = {}, stdin?: string) =>
    runCli(args, { env: { COURIER_URL: api.url, COURIER_TOKEN: TOKEN, ...env }, stdin });

  beforeAll(async () => {
    api = await startApi();
    receiver = await startReceiver((req, res) => {
      res.writeHead(req.url === '/gone' && gone ? 410 : 200);
      res.end(req.url === '/gone' && gone ? 'no such customer' : 'ok');
    });
    engine = virtualWorker(api.db, { clock: api.clock });
    await createApp(api, { uid: 'acme' });
    endpointId = (await createEndpoint(api, 'acme', { url: `${receiver.url}/ok`, uid: 'main' })).id;
    await createApp(api, { uid: 'dlq' });
    await createEndpoint(api, 'dlq', { url: `${receiver.url}/gone`, uid: 'broken' });
  });
  afterAll(async () => {
    await engine.sender.close();
    await receiver.close();
    await api.close();
  });

  /** Runs the worker until nothing is due (one second of virtual time per round, for rate limits). */
  async function deliverAll() {
    for (let round = 0; round < 20; round++) {
      api.clock.advance(1000);
      if ((await engine.worker.runOnce()) === 0) return;
    }
  }
  const publish = async (app: string, n: number) => {
    for (let i = 0; i < n; i++) {
      await api.request('POST', `/api/v1/app/${app}/msg`, {
        body: { eventType: 'order.created', payload: { i } },
      });
    }
  };
  const messageCount = async (app: string) =>
    (await api.request('GET', `/api/v1/app/${app}/msg?limit=250`)).body.data.length as number;

  it('send publishes a message, from an argument or standard input', async () => {
    const [table, json] = await Promise.all([
      cli(['send', 'acme', 'invoice.paid', '{"invoice":42}', '--event-id', 'inv-42', '--channel', 'eu']),
      cli(['send', 'acme', 'invoice.paid', '-', '--json'], {}, '{"invoice":43}'),
    ]);
    expect(table).toMatchObject({ code: 0, stderr: '' });
    const [header, row] = table.stdout.trimEnd().split('\n');
    expect(header).toMatch(/^ID +EVENT TYPE +EVENT ID +CHANNELS +TAGS +CREATED +PAYLOAD KEPT UNTIL$/);
    const id = /^(msg_\w+) +invoice\.paid +inv-42 +eu +- +2026-01-01 12:00:\d\dZ +-$/.exec(row!)?.[1];
    const stored = await api.request('GET', '/api/v1/app/acme/msg/inv-42');
    expect(stored.body).toMatchObject({ id, payload: { invoice: 42 }, channels: ['eu'] });

    expect(json).toMatchObject({ code: 0, stderr: '' });
    const message = JSON.parse(json.stdout);
    expect(message).toMatchObject({ id: expect.stringMatching(/^msg_/), payload: { invoice: 43 } });
    expect((await api.request('GET', `/api/v1/app/acme/msg/${message.id}`)).status).toBe(200);
  });

  it('send tags a message, keeps its payload for a time, and publishes once under an idempotency key', async () => {
    // Sent before its application exists: the 404 stored under the key is answered again, and says so.
    const early = ['send', 'send-keys', 'e', '{}', '--idempotency-key', 'too early'];
    const missing = 'courier: Application send-keys not found (not_found, HTTP 404)';
    expect((await cli(early)).stderr).toBe(`${missing}\n`);
    // An application of its own: the other tests count acme's messages and deliveries.
    await createApp(api, { uid: 'send-keys' });
    expect((await cli(early)).stderr).toBe(
      `${missing} (the first answer to this idempotency key, replayed)\n`,
    );
    // A tag given twice counts once (the API refuses repeats).
    const args = [
      'send',
      'send-keys',
      'invoice.paid',
      '{"invoice":44}',
      '--tag',
      'billing',
      '--tag',
      'q1,billing',
    ];
    const keyed = [...args, '--payload-retention', '1h', '--idempotency-key', 'invoice 44'];
    const until = new Date(api.clock.now() + 3_600_000).toISOString();
    const shown = (iso: string) => `${iso.slice(0, 10)} ${iso.slice(11, 19)}Z`;
    const table = await cli(keyed);
    expect(table).toMatchObject({ code: 0, stderr: '' });
    const row = table.stdout.trimEnd().split('\n')[1]!;
    const id = /^(msg_\w+) +invoice\.paid +- +- +billing,q1 +\S+ \S+ +\S+ \S+$/.exec(row)?.[1];
    expect(row.endsWith(shown(until))).toBe(true);
    const message = (await api.request('GET', `/api/v1/app/send-keys/msg/${id}`)).body;
    expect(message).toMatchObject({ tags: ['billing', 'q1'], payloadExpiresAt: until });
    // The same send again, as after a lost answer: the same message, no second one.
    const before = await messageCount('send-keys');
    const again = await cli([...keyed, '--json']);
    const repeated = `courier: nothing new was published: ${id} was published under this --idempotency-key at ${shown(message.timestamp)}\n`;
    expect(again).toMatchObject({ code: 0, stderr: repeated });
    expect(JSON.parse(again.stdout)).toMatchObject({ id, tags: ['billing', 'q1'], payloadExpiresAt: until });
    // Once the payload has gone, the repeat says when.
    api.clock.advance(3_600_000);
    const late = await cli(keyed);
    expect(late.stderr).toBe(repeated);
    expect(late.stdout.trimEnd().split('\n')[1]).toMatch(new RegExp(`^${id} .* gone ${shown(until)}$`));
    expect(await messageCount('send-keys')).toBe(before);
    // Another request under the key is refused, as the API refuses it.
    const other = await cli([...args, '--idempotency-key', 'invoice 44']);
    expect(other).toMatchObject({ code: 1, stdout: '' });
    expect(other.stderr).toMatch(/already used for a different request/);
  });

  it('endpoints lists the endpoints with status and limits', async () => {
    const [table, json] = await Promise.all([
      cli(['endpoints', 'acme']),
      cli(['endpoints', 'acme', '--json']),
    ]);
    expect(table).toMatchObject({ code: 0, stderr: '' });
    const lines = table.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^ID +UID +URL +STATUS +MAX IN FLIGHT +RATE LIMIT +PUBLIC ONLY$/);
    expect(lines).toHaveLength(2);
    expect(lines[1]).toMatch(
      new RegExp(`^${endpointId} +main +${receiver.url}/ok +enabled +\\d+ +(\\d+/s|-) +no$`),
    );
    expect(JSON.parse(json.stdout)).toEqual([
      expect.objectContaining({ id: endpointId, uid: 'main', publicOnly: false }),
    ]);
    // One COURIER_ALLOW_PRIVATE_NETWORKS does not apply to.
    const app = await createApp(api, { uid: 'cli-public-only' });
    await createEndpoint(api, app, { url: 'https://hooks.example/in', publicOnly: true });
    const closed = await cli(['endpoints', 'cli-public-only']);
    expect(closed.stdout.trimEnd().split('\n')[1]).toMatch(/ yes$/);
  });

  it('endpoints shows since when every attempt to an enabled endpoint has failed', async () => {
    const failing = (at: string | null) =>
      api.db.query(
        'update courier_endpoint_queues set failing_since = $2, last_failure_at = $2 where endpoint_id = $1',
        [endpointId, at],
      );
    try {
      await failing('2026-11-30T08:00:00Z');
      const listed = await cli(['endpoints', 'acme']);
      expect(listed.stdout).toMatch(/ enabled; failing since 2026-11-30 08:00:00Z +\d+ /);
      const json = await cli(['endpoints', 'acme', '--json']);
      expect(JSON.parse(json.stdout)[0].failingSince).toBe('2026-11-30T08:00:00.000Z');
    } finally {
      await failing(null);
    }
  });

  it('endpoints shows a wait the receiver asked for until it ends', async () => {
    const hold = (at: string | null) =>
      api.db.query('update courier_endpoint_queues set retry_after_until = $2 where endpoint_id = $1', [
        endpointId,
        at,
      ]);
    try {
      await hold('2099-01-01T12:00:00Z');
      const held = await cli(['endpoints', 'acme']);
      expect(held.stdout).toMatch(/ enabled; Retry-After until 2099-01-01 12:00:00Z +\d+ /);
      await hold('2001-01-01T12:00:00Z');
      const over = await cli(['endpoints', 'acme']);
      expect(over.stdout).toMatch(/ enabled +\d+ /);
    } finally {
      await hold(null);
    }
  });

  it('attempts shows the deliveries made', async () => {
    await deliverAll();
    const [table, json, one] = await Promise.all([
      cli(['attempts', 'acme', 'main']),
      cli(['attempts', 'acme', 'main', '--json', '--limit', '1']),
      cli(['attempts', 'acme', 'main', '--msg', 'inv-42']),
    ]);
    expect(table).toMatchObject({ code: 0, stderr: '' });
    const lines = table.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^TIME +MESSAGE +# +STATUS +RESULT +DURATION +DECISION$/);
    expect(lines).toHaveLength(3); // both messages of the first test
    expect(lines[1]).toMatch(/^2026-01-01 \d\d:\d\d:\d\dZ +msg_\w+ +1 +200 +success +\d+ ms +delivered$/);
    const parsed = JSON.parse(json.stdout);
    expect(parsed).toHaveLength(1);
    expect(parsed[0]).toMatchObject({ endpointId, responseStatusCode: 200, decision: 'delivered' });
    expect(one.stdout.trimEnd().split('\n')).toHaveLength(2);
  });

  it('endpoints --stats counts each endpoint’s messages by where they stand', async () => {
    const [table, json] = await Promise.all([
      cli(['endpoints', 'acme', '--stats']),
      cli(['endpoints', 'acme', '--stats', '--json']),
    ]);
    expect(table).toMatchObject({ code: 0, stderr: '' });
    const lines = table.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/ +RATE LIMIT +PUBLIC ONLY +DELIVERED +PENDING +SENDING +FAILED$/);
    expect(lines[1]).toMatch(new RegExp(`^${endpointId} .* +2 +0 +0 +0$`));
    expect(JSON.parse(json.stdout)).toEqual([
      expect.objectContaining({
        id: endpointId,
        stats: { success: 2, pending: 0, sending: 0, fail: 0, canceled: 0 },
      }),
    ]);
  });

  it('status shows where a message stands at each endpoint', async () => {
    await deliverAll();
    const [table, json, unknown] = await Promise.all([
      cli(['status', 'acme', 'inv-42']),
      cli(['status', 'acme', 'inv-42', '--json']),
      cli(['status', 'acme', 'no-such-event']),
    ]);
    expect(table).toMatchObject({ code: 0, stderr: '' });
    const lines = table.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^ENDPOINT +UID +URL +STATUS +ATTEMPTS +NEXT ATTEMPT$/);
    expect(lines).toHaveLength(2);
    expect(lines[1]).toMatch(new RegExp(`^${endpointId} +main +${receiver.url}/ok +delivered +1 +-$`));
    expect(JSON.parse(json.stdout)).toEqual([
      expect.objectContaining({ id: endpointId, statusText: 'success', nextAttempt: null }),
    ]);
    expect(unknown).toEqual({
      code: 1,
      stdout: '',
      stderr: 'courier: Message no-such-event not found (not_found, HTTP 404)\n',
    });
  });

  it('dlq list shows the dead letters and dlq replay replays them all', async () => {
    await publish('dlq', 3);
    await deliverAll();
    const [table, json, later] = await Promise.all([
      cli(['dlq', 'list', 'dlq', 'broken']),
      cli(['dlq', 'list', 'dlq', 'broken', '--json']),
      cli(['dlq', 'list', 'dlq', 'broken', '--since', '2030-01-01']),
    ]);
    expect(table).toMatchObject({ code: 0, stderr: '' });
    const lines = table.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^MESSAGE +STATE +ATTEMPTS +LAST ERROR +PAYLOAD +WHEN$/);
    expect(lines.slice(1)).toEqual(
      Array(3).fill(expect.stringMatching(/^msg_\w+ +failed +1 +.*410.* +kept +2026-/)),
    );
    const listed = JSON.parse(json.stdout) as { msgId: string }[];
    expect(listed).toEqual(
      Array(3).fill(expect.objectContaining({ state: 'failed', payloadExpunged: false })),
    );
    expect(later).toMatchObject({ code: 0, stdout: 'no dead letters\n' });

    gone = false;
    // One whose payload is gone cannot be sent again: said apart.
    expect((await api.request('DELETE', `/api/v1/app/dlq/msg/${listed[0]!.msgId}/content`)).status).toBe(204);
    expect((await cli(['dlq', 'list', 'dlq', 'broken'])).stdout).toMatch(/ expunged +2026-/);
    // Not a terminal: no progress bar on stderr, only the final line.
    expect(await cli(['dlq', 'replay', 'dlq', 'broken'])).toEqual({
      code: 0,
      stdout: 'replayed 2 deliveries (1 delivery not replayable: payload expunged)\n',
      stderr: '',
    });
    await deliverAll();
    const after = await cli(['dlq', 'replay', 'dlq', 'broken', '--json']);
    expect(JSON.parse(after.stdout)).toEqual({ replayed: 0, total: 1, payloadExpunged: 1 });
    const attempts = await api.request('GET', '/api/v1/app/dlq/attempt/endpoint/broken?status=0');
    expect(attempts.body.data).toHaveLength(2);
  });

  it('replay-missing sends an endpoint what it missed while disabled', async () => {
    await createApp(api, { uid: 'missed' });
    await createEndpoint(api, 'missed', { url: `${receiver.url}/missed`, uid: 'ep' });
    const since = new Date(api.clock.now()).toISOString();
    await api.request('PATCH', '/api/v1/app/missed/endpoint/ep', { body: { disabled: true } });
    await publish('missed', 2);
    await api.request('PATCH', '/api/v1/app/missed/endpoint/ep', { body: { disabled: false } });
    expect(await cli(['replay-missing', 'missed', 'ep', '--since', since])).toEqual({
      code: 0,
      stdout: 'replayed 2 messages\n',
      stderr: '',
    });
    await deliverAll();
    expect(receiver.requests.filter((r) => r.url === '/missed')).toHaveLength(2);
    const [again, swapped, none] = await Promise.all([
      cli(['replay-missing', 'missed', 'ep', '--since', since, '--json']),
      cli(['replay-missing', 'missed', 'ep', '--since', '2026-02-01', '--until', '2026-01-01']),
      cli(['replay-missing', 'missed', 'ep']),
    ]);
    expect(JSON.parse(again.stdout)).toEqual({ replayed: 0 });
    expect(swapped).toMatchObject({ code: 2, stdout: '' });
    expect(swapped.stderr).toMatch(/--since .* must be before --until/);
    expect(none).toMatchObject({ code: 2, stdout: '' });
    expect(none.stderr).toMatch(/required option '--since <time>'/);
  });

  it('bulk-replay sends an endpoint again the messages it had that match the filters', async () => {
    await createApp(api, { uid: 'bulk' });
    await createEndpoint(api, 'bulk', { url: `${receiver.url}/bulk`, uid: 'ep' });
    const since = new Date(api.clock.now()).toISOString();
    await publish('bulk', 2);
    await api.request('POST', '/api/v1/app/bulk/msg', {
      body: { eventType: 'invoice.paid', payload: { invoice: 1 } },
    });
    await deliverAll();
    const sent = () => receiver.requests.filter((r) => r.url === '/bulk');
    expect(sent()).toHaveLength(3);

    expect(
      await cli(['bulk-replay', 'bulk', 'ep', '--since', since, '--event-type', 'invoice.paid']),
    ).toEqual({
      code: 0,
      stdout: 'replayed 1 message\n',
      stderr: '',
    });
    await deliverAll();
    expect(sent()).toHaveLength(4);
    // The same message again: its id and bytes.
    const invoice = sent().find((r) => r.body.toString() === '{"invoice":1}')!;
    expect(sent()[3]).toMatchObject({ body: invoice.body });
    expect(sent()[3]!.headers['webhook-id']).toBe(invoice.headers['webhook-id']);

    const [delivered, none, failed, badStatus, badClass] = await Promise.all([
      cli([
        'bulk-replay',
        'bulk',
        'ep',
        '--since',
        since,
        '--status',
        'delivered',
        '--status-code-class',
        '200',
        '--json',
      ]),
      cli(['bulk-replay', 'bulk', 'ep', '--since', since, '--status-code-class', '500', '--json']),
      cli(['bulk-replay', 'bulk', 'ep', '--since', since, '--status', 'failed']),
      cli(['bulk-replay', 'bulk', 'ep', '--since', since, '--status', 'fail']),
      cli(['bulk-replay', 'bulk', 'ep', '--since', since, '--status-code-class', '404']),
    ]);
    expect(JSON.parse(delivered.stdout)).toEqual({ replayed: 3 });
    expect(JSON.parse(none.stdout)).toEqual({ replayed: 0 });
    expect(failed).toEqual({ code: 0, stdout: 'replayed 0 messages\n', stderr: '' });
    for (const refused of [badStatus, badClass]) {
      expect(refused).toMatchObject({ code: 2, stdout: '' });
      expect(refused.stderr).toMatch(/Allowed choices are/);
    }
    await deliverAll();
    expect(sent()).toHaveLength(7);
  });

  it('event-types import creates event types from an OpenAPI document, or says what it would do', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'courier-cli-'));
    const file = join(dir, 'openapi.yaml');
    await writeFile(
      file,
      'openapi: 3.1.0\nwebhooks:\n  cli.imported:\n    post:\n      summary: From the CLI\n',
    );
    const dry = await cli(['event-types', 'import', file, '--dry-run']);
    expect(dry).toMatchObject({ code: 0, stderr: '' });
    expect(dry.stdout).toMatch(/^EVENT TYPE +CHANGE\ncli\.imported +would be created or updated\n$/);
    expect((await api.request('GET', '/api/v1/event-type/cli.imported')).status).toBe(404);

    const done = await cli(['event-types', 'import', '-', '--json'], {}, await readFile(file, 'utf8'));
    expect(JSON.parse(done.stdout)).toEqual({
      modified: ['cli.imported'],
      to_modify: [expect.objectContaining({ name: 'cli.imported', description: 'From the CLI' })],
      archived: [],
    });
    expect((await api.request('GET', '/api/v1/event-type/cli.imported')).body.description).toBe(
      'From the CLI',
    );
    expect(await cli(['event-types', 'import', file])).toEqual({
      code: 0,
      stdout: 'every event type already matches the document\n',
      stderr: '',
    });

    await writeFile(join(dir, 'empty.yaml'), 'openapi: 3.1.0\n');
    const [missing, noWebhooks] = await Promise.all([
      cli(['event-types', 'import', join(dir, 'nope.yaml')]),
      cli(['event-types', 'import', join(dir, 'empty.yaml')]),
    ]);
    expect(missing).toMatchObject({ code: 2, stdout: '' });
    expect(missing.stderr).toMatch(/cannot read .*nope\.yaml/);
    expect(noWebhooks).toMatchObject({ code: 1, stdout: '' });
    expect(noWebhooks.stderr).toMatch(/invalid_spec.*has no webhooks|has no webhooks/);
    await rm(dir, { recursive: true });
  });

  it('usage counts message destinations per application, and what their endpoints subscribe to', async () => {
    const metered = await createApp(api, { uid: 'metered' });
    await createEndpoint(api, 'metered', { url: `${receiver.url}/ok`, filterTypes: ['order.created'] });
    await createEndpoint(api, 'metered', { url: `${receiver.url}/ok` });
    const since = new Date(api.clock.now()).toISOString();
    const until = new Date(api.clock.now() + 86_400_000).toISOString();
    await publish('metered', 2);

    const [table, json] = await Promise.all([
      cli(['usage', 'apps', '--since', since, '--until', until, '--app', 'metered', '--app', 'nobody']),
      cli([
        'usage',
        'apps',
        '--since',
        since,
        '--until',
        until,
        '--app',
        metered,
        '--app',
        'nobody',
        '--json',
      ]),
    ]);
    expect(table.code).toBe(1);
    expect(table.stdout).toMatch(new RegExp(`^APPLICATION +UID +DESTINATIONS\n${metered} +metered +4\n$`));
    expect(table.stderr).toBe('courier: no application nobody\n');
    expect(json).toMatchObject({ code: 1, stderr: 'courier: no application nobody\n' });
    expect(JSON.parse(json.stdout)).toEqual({
      appStats: [{ appId: metered, appUid: 'metered', messageDestinations: 4 }],
      unresolvedAppIds: ['nobody'],
    });
    const nothing = await cli(['usage', 'apps', '--since', since, '--until', until, '--app', 'nobody']);
    expect(nothing).toMatchObject({ code: 1, stdout: '' });
    expect(nothing.stderr).toMatch(/appIds: names no application/);
    const long = await cli(['usage', 'apps', '--since', '2000-01-01']);
    expect(long).toMatchObject({ code: 1, stdout: '' });
    expect(long.stderr).toMatch(/until: must be at most 31 days after since/);
    const later = await cli(['usage', 'apps', '--since', '2099-01-01']);
    expect(later.stderr).toMatch(/--since \(2099-01-01T00:00:00.000Z\) must be before --until/);
    expect(later.code).toBe(2);

    const subscriptions = await cli(['usage', 'event-types']);
    expect(subscriptions.code).toBe(0);
    expect(subscriptions.stdout).toMatch(/^APPLICATION +EVERY TYPE +EVENT TYPES\n/);
    expect(subscriptions.stdout).toMatch(new RegExp(`\n${metered} +yes +order\\.created\n`));
  });

  it('operational-endpoints adds, lists, shows the secret of and removes where operational events go', async () => {
    const empty = await cli(['operational-endpoints', 'list']);
    expect(empty).toEqual({ code: 0, stdout: 'no operational webhook endpoints\n', stderr: '' });
    const added = await cli([
      'operational-endpoints',
      'add',
      `${receiver.url}/ops`,
      '--uid',
      'oncall',
      '--filter-type',
      'message.attempt.exhausted',
      '--filter-type',
      'endpoint.paused',
    ]);
    expect(added.code).toBe(0);
    const [, id, secret] = added.stdout.match(
      /^created (ep_\w+) \(oncall\)\nsigning secret: (whsec_\S+)\n$/,
    )!;
    const table = await cli(['operational-endpoints', 'list']);
    expect(table.stdout).toMatch(/^ENDPOINT +UID +URL +STATUS +EVENT TYPES\n/);
    expect(table.stdout).toMatch(
      new RegExp(
        `\n${id} +oncall +${receiver.url}/ops +enabled +message\\.attempt\\.exhausted, endpoint\\.paused\n$`,
      ),
    );
    expect(await cli(['operational-endpoints', 'secret', 'oncall'])).toMatchObject({
      code: 0,
      stdout: `${secret}\n`,
    });
    const refused = await cli([
      'operational-endpoints',
      'add',
      `${receiver.url}/x`,
      '--filter-type',
      'invoice.paid',
    ]);
    expect(refused).toMatchObject({ code: 1, stdout: '' });
    expect(refused.stderr).toMatch(
      /^courier: body\.filterTypes\.0: must be one of: .* \(validation, HTTP 422\)\n$/,
    );
    expect(await cli(['operational-endpoints', 'remove', 'oncall'])).toMatchObject({
      code: 0,
      stdout: 'deleted oncall\n',
    });
    const gone = await cli(['operational-endpoints', 'secret', 'oncall']);
    expect(gone).toMatchObject({
      code: 1,
      stderr: 'courier: Operational webhook endpoint oncall not found (not_found, HTTP 404)\n',
    });
  });

  it('app-tokens create makes a token that opens one application, and expire ends them', async () => {
    const [limited, readOnly, hourly] = await Promise.all([
      cli([
        'app-tokens',
        'create',
        'acme',
        '--capability',
        'ViewBase,ViewEndpointSecret',
        '--session',
        's-42',
      ]),
      cli(['app-tokens', 'create', 'acme', '--read-only', '--expiry', '2h', '--json']),
      cli(['app-tokens', 'create', 'acme', '--expiry', '1h', '--json']),
    ]);
    const hour = JSON.parse(hourly.stdout).token as string;
    expect(limited).toMatchObject({ code: 0, stderr: '' });
    const acmeId = (await api.request('GET', '/api/v1/app/acme')).body.id;
    const [, token, url] = /^token: (courierapp_\S+)\nurl: {3}(\S+)\n$/.exec(limited.stdout) ?? [];
    expect(url).toBe(`${api.url}/portal#app=${acmeId}&key=${encodeURIComponent(token ?? '')}`);
    expect(readOnly).toMatchObject({ code: 0, stderr: '' });
    const viewer = JSON.parse(readOnly.stdout).token as string;
    const secret = `/api/v1/app/acme/endpoint/main/secret`;
    expect((await api.request('GET', secret, { token })).status).toBe(200);
    expect((await api.request('POST', `${secret}/rotate`, { token, body: {} })).status).toBe(403);
    expect((await api.request('GET', secret, { token: viewer })).status).toBe(403);
    expect((await api.request('GET', '/api/v1/app/acme/endpoint', { token: viewer })).status).toBe(200);
    expect((await api.request('GET', '/api/v1/app/dlq/endpoint', { token: viewer })).status).toBe(403);

    // A token with feature flags sees the event types flagged with one of them.
    await api.request('POST', '/api/v1/event-type', {
      body: { name: 'beta.only', description: 'd', featureFlags: ['beta'] },
    });
    const flagged = await cli([
      'app-tokens',
      'create',
      'acme',
      '--feature-flag',
      'early',
      '--feature-flag',
      'beta',
    ]);
    expect(flagged).toMatchObject({ code: 0, stderr: '' });
    const beta = /^token: (courierapp_\S+)/.exec(flagged.stdout)?.[1];
    expect(beta).toBeDefined();
    expect((await api.request('GET', '/api/v1/event-type/beta.only', { token: beta })).status).toBe(200);
    expect((await api.request('GET', '/api/v1/event-type/beta.only', { token })).status).toBe(404);
    const badFlag = await cli(['app-tokens', 'create', 'acme', '--feature-flag', 'no spaces']);
    expect(badFlag).toMatchObject({ code: 1, stdout: '' });
    expect(badFlag.stderr).toBe(
      'courier: body.featureFlags.0: must match ^[a-zA-Z0-9\\-_.]+$ (validation, HTTP 422)\n',
    );

    const expired = await cli(['app-tokens', 'expire', 'acme', '--session', 's-42']);
    expect(expired).toEqual({ code: 0, stdout: "the tokens of acme's session s-42 ended\n", stderr: '' });
    expect((await api.request('GET', secret, { token })).status).toBe(401);
    expect((await api.request('GET', '/api/v1/app/acme', { token: viewer })).status).toBe(200);
    const later = await cli(['app-tokens', 'expire', 'acme', '--in', '90m', '--json']);
    expect(later).toMatchObject({ code: 0, stderr: '' });
    expect(JSON.parse(later.stdout)).toEqual({ app: 'acme', sessions: [], inSeconds: 5400 });
    api.clock.advance(3_600_000);
    expect((await api.request('GET', '/api/v1/app/acme', { token: viewer })).status).toBe(200);
    expect((await api.request('GET', '/api/v1/app/acme', { token: hour })).status).toBe(401);
    api.clock.advance(1_800_000); // 90 minutes: before its own 2 hours were up
    expect((await api.request('GET', '/api/v1/app/acme', { token: viewer })).status).toBe(401);
    const now = await cli(['app-tokens', 'expire', 'acme', '--in', '0']);
    expect(now).toEqual({ code: 0, stdout: 'every token of acme ended\n', stderr: '' });

    const refusals = await Promise.all([
      cli(['app-tokens', 'create', 'acme', '--capability', 'ViewBase,Everything']),
      cli(['app-tokens', 'create', 'acme', '--capability', 'ManageEndpoint']),
      cli(['app-tokens', 'create', 'acme', '--read-only', '--capability', 'ViewBase']),
      cli(['app-tokens', 'create', 'acme', '--expiry', 'soon']),
      cli(['app-tokens', 'create', 'acme', '--expiry', '30d']),
      cli(['app-tokens', 'expire', 'acme', '--in', '8d']),
    ]);
    for (const run of refusals) expect(run).toMatchObject({ code: 2, stdout: '' });
    const [unknown, noBase, both, badExpiry, tooLong, tooLate] = refusals.map((r) => r.stderr);
    expect(unknown).toMatch(
      /argument 'ViewBase,Everything' is invalid. Everything is not a capability: expected ViewBase, /,
    );
    expect(noBase).toBe('courier: --capability must include ViewBase, which every token has\n');
    expect(both).toMatch(/option '--read-only' cannot be used with option '--capability <name>'/);
    expect(badExpiry).toMatch(/'--expiry <duration>' argument 'soon' is invalid. invalid duration "soon"/);
    expect(tooLong).toMatch(/'--expiry <duration>' argument '30d' is invalid. expected between 1h and 7d\./);
    expect(tooLate).toMatch(/'--in <duration>' argument '8d' is invalid. expected between 0s and 7d\./);
    const missing = await cli(['app-tokens', 'create', 'no-such-app']);
    expect(missing).toEqual({
      code: 1,
      stdout: '',
      stderr: 'courier: Application no-such-app not found (not_found, HTTP 404)\n',
    });
  });

  it('reports API and network failures on stderr with exit 1', async () => {
    const down = `http://127.0.0.1:${await closedPort()}`;
    // A connection that closes once the request is in (a restart, a proxy's timeout).
    const dropper = await startRawReceiver((socket) => socket.destroy());
    const dropping = `http://127.0.0.1:${dropper.port}`;
    const [unknownApp, badToken, unreachable, invalid, dropped] = await Promise.all([
      cli(['endpoints', 'nope', '--json']),
      cli(['endpoints', 'acme'], { COURIER_TOKEN: 'wrong-token-0123456789' }),
      cli(['attempts', 'acme', 'main', '--url', down]),
      cli(['send', 'acme', 'e', '{}', '--event-id', 'bad id!']),
      cli(['send', 'acme', 'e', '{}', '--idempotency-key', 'k1', '--url', dropping]),
    ]);
    await dropper.close();
    expect(dropped).toMatchObject({ code: 1, stdout: '' });
    const [what, advice] = dropped.stderr.split('; ');
    expect(what).toMatch(/ \(.+\)$/); // the cause undici gives
    expect(
      what!.startsWith(`courier: the connection to Courier at ${dropping} closed before its answer (`),
    ).toBe(true);
    expect(advice).toBe(
      'it may have been published: run the same command again, with the same --idempotency-key, within 24 hours\n',
    );
    expect(unknownApp).toEqual({
      code: 1,
      stdout: '',
      stderr: 'courier: Application nope not found (not_found, HTTP 404)\n',
    });
    expect(badToken).toMatchObject({ code: 1, stdout: '' });
    expect(badToken.stderr).toBe('courier: Invalid token (authentication_failed, HTTP 401)\n');
    expect(unreachable).toMatchObject({ code: 1, stdout: '' });
    expect(unreachable.stderr).toBe(`courier: cannot reach Courier at ${down}: is it running?\n`);
    expect(invalid.code).toBe(1);
    expect(invalid.stderr).toMatch(/^courier: body\.eventId: must match .* \(validation, HTTP 422\)\n$/);
  });

  it('refuses bad input with exit 2 and sends nothing', async () => {
    const before = await messageCount('acme');
    // Other payload mistakes (not an object, an unreadable @file) are covered by format.test.ts.
    const tags = Array.from({ length: 11 }, (_, i) => `t${i}`).join(',');
    const [badJson, noToken, badTime, reversed, partHour, tooLong, badKey, trailingSpace, ...names] =
      await Promise.all([
        cli(['send', 'acme', 'e', '{"a":']),
        cli(['send', 'acme', 'e', '{}'], { COURIER_TOKEN: '' }),
        cli(['dlq', 'replay', 'dlq', 'broken', '--since', 'yesterday']),
        cli(['dlq', 'replay', 'dlq', 'broken', '--since', '2026-03-01', '--until', '2026-01-01']),
        cli(['send', 'acme', 'e', '{}', '--payload-retention', '90m']),
        cli(['send', 'acme', 'e', '{}', '--payload-retention', '91d']),
        cli(['send', 'acme', 'e', '{}', '--idempotency-key', ' lead']),
        cli(['send', 'acme', 'e', '{}', '--idempotency-key', 'trail ']),
        cli(['send', 'acme', 'bad type!', '{}']),
        cli(['messages', 'acme', '--event-type', 'ok', '--event-type', 'a/b']),
        cli(['send', 'acme', 'e', '{}', '--channel', 'eu west']),
        cli(['send', 'acme', 'e', '{}', '--tag', 'ok', '--tag', 'q1:2026']),
        cli(['send', 'acme', 'e', '{}', '--tag', tags]),
        cli(['send', 'acme', 'e', '{}', '--tag', 'courier.example']),
        cli(['bulk-replay', 'acme', 'main', '--since', '2026-01-01', '--tag', 'a', '--tag', 'b']),
        cli(['operational-endpoints', 'add', 'ftp://ops.example/x']),
      ]);
    for (const run of [
      badJson,
      noToken,
      badTime,
      reversed,
      partHour,
      tooLong,
      badKey,
      trailingSpace,
      ...names,
    ]) {
      expect(run.code).toBe(2);
      expect(run.stdout).toBe('');
    }
    expect(badJson.stderr).toMatch(/^courier: invalid JSON in the payload argument: /);
    expect(noToken.stderr).toMatch(/^courier: no API token: set COURIER_TOKEN/);
    expect(badTime.stderr).toMatch(/option '--since <time>' argument 'yesterday' is invalid/);
    expect(reversed.stderr).toBe(
      'courier: --since (2026-03-01T00:00:00.000Z) must be before --until (2026-01-01T00:00:00.000Z)\n',
    );
    for (const [run, given] of [
      [partHour, '90m'],
      [tooLong, '91d'],
    ] as const) {
      expect(run.stderr).toContain(
        `'--payload-retention <duration>' argument '${given}' is invalid. expected whole hours between 1h and 90d, such as 24h or 7d.`,
      );
    }
    for (const [run, given] of [
      [badKey, ' lead'],
      [trailingSpace, 'trail '],
    ] as const) {
      expect(run.stderr).toContain(
        `'--idempotency-key <key>' argument '${given}' is invalid. expected 1-256 printable ASCII characters, not beginning or ending with a space.`,
      );
    }
    expect(names.map((run) => run.stderr.split('\n')[0])).toEqual([
      `error: command-argument value 'bad type!' is invalid for argument 'event-type'. "bad type!" is not an event type (1-256 of letters, digits and - _ .).`,
      `error: option '--event-type <type>' argument 'a/b' is invalid. "a/b" is not an event type (1-256 of letters, digits and - _ .).`,
      `error: option '--channel <channel>' argument 'eu west' is invalid. "eu west" is not a channel (1-128 of letters, digits and - _ . :).`,
      `error: option '--tag <tag>' argument 'q1:2026' is invalid. "q1:2026" is not a tag (1-128 of letters, digits and - _ . / \\ #).`,
      `error: option '--tag <tag>' argument '${tags}' is invalid. at most 10 tags on one message.`,
      `error: option '--tag <tag>' argument 'courier.example' is invalid. courier.example is reserved for example messages (send-example).`,
      `error: option '--tag <tag>' argument 'b' is invalid. one tag only: the API filters by one.`,
      `error: command-argument value 'ftp://ops.example/x' is invalid for argument 'url'. expected an http(s) URL.`,
    ]);
    expect(await messageCount('acme')).toBe(before);
  });

  it('documents itself, and names mistyped commands (exit 2)', async () => {
    const [help, dlqHelp, endpointsHelp, typo] = await Promise.all([
      cli(['--help']),
      cli(['dlq', '--help']),
      cli(['endpoints', '--help']),
      cli(['endpoint', 'acme']),
    ]);
    expect(help.code).toBe(0);
    for (const usage of [
      'send <app> <event-type> <payload>',
      'apps [command]',
      'endpoints [command]',
      'attempts <app> <endpoint>',
      'status <app> <message>',
    ]) {
      expect(help.stdout).toContain(usage);
    }
    expect(help.stdout).toContain('COURIER_TOKEN');
    expect(dlqHelp.code).toBe(0);
    expect(dlqHelp.stdout).toMatch(/list <app> <endpoint> +list an endpoint's dead letters/);
    expect(dlqHelp.stdout).toMatch(/replay <app> <endpoint> +replay dead letters/);
    for (const usage of [
      'list <app>',
      'add <app> <url>',
      'pause <app> <endpoint>',
      'resume <app> <endpoint>',
    ]) {
      expect(endpointsHelp.stdout).toContain(usage);
    }
    expect(typo).toMatchObject({ code: 2, stdout: '' });
    expect(typo.stderr).toMatch(/^error: unknown command 'endpoint'\n/);
  });
});
