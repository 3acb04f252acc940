/**
 * `courier messages` end to end: the real binary against a real API on PostgreSQL, deliveries made
 * by a worker on virtual time to loopback receivers, one answering 200 and one 410 (a dead letter).
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Receiver, startReceiver } from '../delivery/receiver.ts';
import { createApp, createEndpoint, publishMessage, startApi, type TestApi, TOKEN } from '../e2e/support.ts';
import { virtualWorker } from '../support/engine.ts';
import { runCli } from './run.ts';

describe('courier messages', () => {
  let api: TestApi;
  let receiver: Receiver;
  let engine: ReturnType<typeof virtualWorker>;
  const ids: Record<'order' | 'invoice' | 'later', string> = { order: '', invoice: '', later: '' };
  let laterAt = '';
  const cli = (args: string[]) => runCli(args, { env: { COURIER_URL: api.url, COURIER_TOKEN: TOKEN } });
  const rows = (stdout: string) => stdout.trimEnd().split('\n').slice(1);

  beforeAll(async () => {
    api = await startApi();
    receiver = await startReceiver((req, res) => res.writeHead(req.url === '/gone' ? 410 : 200).end());
    engine = virtualWorker(api.db, { clock: api.clock });
    await createApp(api, { uid: 'shop' });
    await createApp(api, { uid: 'quiet' });
    await createEndpoint(api, 'shop', { url: `${receiver.url}/ok`, uid: 'ok' });
    await createEndpoint(api, 'shop', { url: `${receiver.url}/gone`, uid: 'gone' });
    ids.order = await publishMessage(api, 'shop', { eventType: 'order.created', tags: ['q1'] });
    api.clock.advance(1000);
    ids.invoice = await publishMessage(api, 'shop', { eventType: 'invoice.paid', eventId: 'inv-1' });
    for (let round = 0; round < 5; round++) {
      api.clock.advance(1000);
      await engine.worker.runOnce();
    }
    api.clock.advance(60_000);
    ids.later = await publishMessage(api, 'shop', { eventType: 'order.created', channels: ['eu'] });
    laterAt = (await api.request('GET', `/api/v1/app/shop/msg/${ids.later}`)).body.timestamp;
  });
  afterAll(async () => {
    await engine.sender.close();
    await receiver.close();
    await api.close();
  });

  it('lists the latest messages, newest first, with how many endpoints have each delivered, pending, sending, failed', async () => {
    const [table, json] = await Promise.all([cli(['messages', 'shop']), cli(['messages', 'shop', '--json'])]);
    expect(table).toMatchObject({ code: 0, stderr: '' });
    const [header] = table.stdout.split('\n');
    expect(header).toMatch(
      /^ID +EVENT TYPE +EVENT ID +CHANNELS +TAGS +CREATED +DELIVERED +PENDING +SENDING +FAILED$/,
    );
    expect(rows(table.stdout)).toEqual([
      expect.stringMatching(
        new RegExp(`^${ids.later} +order\\.created +- +eu +- +2026-01-01 12:01:0\\dZ +0 +2 +0 +0$`),
      ),
      expect.stringMatching(new RegExp(`^${ids.invoice} +invoice\\.paid +inv-1 +- +- +.+Z +1 +0 +0 +1$`)),
      expect.stringMatching(new RegExp(`^${ids.order} +order\\.created +- +- +q1 +.+Z +1 +0 +0 +1$`)),
    ]);
    // JSON is the API's list items whole: the payload too, which the table leaves out.
    expect(json).toMatchObject({ code: 0, stderr: '' });
    expect(JSON.parse(json.stdout)).toEqual([
      expect.objectContaining({
        id: ids.later,
        payload: { n: 1 },
        statusCounts: { success: 0, pending: 2, sending: 0, fail: 0 },
      }),
      expect.objectContaining({
        id: ids.invoice,
        statusCounts: { success: 1, pending: 0, sending: 0, fail: 1 },
      }),
      expect.objectContaining({
        id: ids.order,
        statusCounts: { success: 1, pending: 0, sending: 0, fail: 1 },
      }),
    ]);
  });

  it('filters by event type, channel, tag and publish time, and shows at most --limit', async () => {
    const listed = async (...args: string[]) => {
      const run = await cli(['messages', 'shop', ...args]);
      expect(run).toMatchObject({ code: 0, stderr: '' });
      return rows(run.stdout).map((row) => row.split(' ')[0]);
    };
    const results = await Promise.all([
      listed('--event-type', 'invoice.paid'),
      listed('--event-type', 'invoice.paid', '--event-type', 'order.created'),
      listed('--channel', 'eu'),
      listed('--tag', 'q1'),
      listed('--since', laterAt),
      listed('--until', laterAt),
      listed('--limit', '2'),
      // Above the API's page size: asked for in pages of 250.
      listed('--limit', '251'),
    ]);
    expect(results).toEqual([
      [ids.invoice],
      [ids.later, ids.invoice, ids.order],
      [ids.later],
      [ids.order],
      // --since takes in its own instant, --until leaves it out.
      [ids.later],
      [ids.invoice, ids.order],
      [ids.later, ids.invoice],
      [ids.later, ids.invoice, ids.order],
    ]);
  });

  it('shows, with --endpoint, where each message stands at that endpoint, and filters by it with --status', async () => {
    const [gone, delivered, failed, json] = await Promise.all([
      cli(['messages', 'shop', '--endpoint', 'gone']),
      cli(['messages', 'shop', '--endpoint', 'ok', '--status', 'delivered']),
      cli(['messages', 'shop', '--endpoint', 'gone', '--status', 'failed', '--event-type', 'invoice.paid']),
      cli(['messages', 'shop', '--endpoint', 'ok', '--status', 'pending', '--json']),
    ]);
    expect(gone).toMatchObject({ code: 0, stderr: '' });
    const [header] = gone.stdout.split('\n');
    expect(header).toMatch(/^ID +EVENT TYPE +EVENT ID +CHANNELS +TAGS +CREATED +STATUS +NEXT ATTEMPT$/);
    expect(rows(gone.stdout)).toEqual([
      expect.stringMatching(
        new RegExp(`^${ids.later} +order\\.created .* +pending +2026-01-01 12:01:0\\dZ$`),
      ),
      expect.stringMatching(new RegExp(`^${ids.invoice} +invoice\\.paid .* +failed +-$`)),
      expect.stringMatching(new RegExp(`^${ids.order} +order\\.created .* +failed +-$`)),
    ]);
    expect(rows(delivered.stdout).map((row) => row.split(' ')[0])).toEqual([ids.invoice, ids.order]);
    expect(rows(failed.stdout).map((row) => row.split(' ')[0])).toEqual([ids.invoice]);
    expect(JSON.parse(json.stdout)).toEqual([
      expect.objectContaining({ id: ids.later, payload: { n: 1 }, status: 1, statusText: 'pending' }),
    ]);
  });

  it('keeps, with --status and no --endpoint, the messages standing so at one endpoint at least', async () => {
    const listed = (run: { stdout: string }) => rows(run.stdout).map((row) => row.split(' ')[0]);
    const [failed, pending, sending] = await Promise.all([
      cli(['messages', 'shop', '--status', 'failed']),
      cli(['messages', 'shop', '--status', 'pending', '--json']),
      cli(['messages', 'shop', '--status', 'sending']),
    ]);
    expect(failed).toMatchObject({ code: 0, stderr: '' });
    expect(listed(failed)).toEqual([ids.invoice, ids.order]);
    expect(JSON.parse(pending.stdout).map((m: { id: string }) => m.id)).toEqual([ids.later]);
    expect(sending).toEqual({ code: 0, stdout: 'no messages match\n', stderr: '' });

    // A server older than the filter drops the parameters it does not know and lists every message:
    // the counts it sends decide, and stderr says how many were left out. One older still sends no
    // counts: the CLI says it cannot filter there.
    const seen: string[] = [];
    let unknown = ['status'];
    const older = createServer(async (req, res) => {
      const url = new URL(req.url!, api.url);
      seen.push(url.searchParams.get('status') ?? '');
      for (const name of unknown) url.searchParams.delete(name);
      const answer = await fetch(url, { headers: { authorization: req.headers.authorization! } });
      res.writeHead(answer.status, { 'content-type': 'application/json' }).end(await answer.text());
    });
    await new Promise<void>((done) => older.listen(0, '127.0.0.1', done));
    try {
      const { port } = older.address() as AddressInfo;
      const run = () =>
        runCli(['messages', 'shop', '--status', 'failed'], {
          env: { COURIER_URL: `http://127.0.0.1:${port}`, COURIER_TOKEN: TOKEN },
        });
      const filtered = await run();
      expect(filtered.code).toBe(0);
      expect(listed(filtered)).toEqual([ids.invoice, ids.order]);
      expect(filtered.stderr).toBe(
        'courier: left out 1 of the 3 messages listed, their counts showing none failed (moved on since, or a server ' +
          'older than this CLI, which lists every message: then only the latest 50 were looked at)\n',
      );
      unknown = ['status', 'with_status'];
      expect(await run()).toEqual({
        code: 1,
        stdout: '',
        stderr:
          'courier: this server sends no statusCounts, so it cannot filter its messages by --status: add --endpoint\n',
      });
      expect(seen).toEqual(['2', '2']);
    } finally {
      await new Promise((done) => older.close(done));
    }
  });

  it('says when there is nothing to list', async () => {
    const [empty, none, sending] = await Promise.all([
      cli(['messages', 'quiet']),
      cli(['messages', 'shop', '--tag', 'nope']),
      cli(['messages', 'shop', '--endpoint', 'ok', '--status', 'sending']),
    ]);
    expect(empty).toEqual({ code: 0, stdout: 'no messages in application quiet\n', stderr: '' });
    expect(none).toEqual({ code: 0, stdout: 'no messages match\n', stderr: '' });
    expect(sending).toEqual({ code: 0, stdout: 'no messages match\n', stderr: '' });
  });

  it('refuses bad filters with exit 2, and an unknown application with exit 1', async () => {
    const [channel, twoTags, reversed, zero, badStatus, unknown, unknownEndpoint] = await Promise.all([
      cli(['messages', 'shop', '--channel', 'eu west']),
      cli(['messages', 'shop', '--tag', 'a', '--tag', 'b']),
      cli(['messages', 'shop', '--since', '2026-03-01', '--until', '2026-01-01']),
      cli(['messages', 'shop', '--limit', '0']),
      cli(['messages', 'shop', '--status', 'lost']),
      cli(['messages', 'nope']),
      cli(['messages', 'shop', '--endpoint', 'nope']),
    ]);
    const usage = [channel, twoTags, reversed, zero, badStatus];
    expect(usage.map((run) => [run.code, run.stdout])).toEqual(Array(usage.length).fill([2, '']));
    expect(badStatus.stderr).toContain(
      "option '--status <status>' argument 'lost' is invalid. Allowed choices are delivered, pending, failed, sending.",
    );
    expect(unknownEndpoint).toEqual({
      code: 1,
      stdout: '',
      stderr: 'courier: Endpoint nope not found (not_found, HTTP 404)\n',
    });
    expect(channel.stderr).toContain(
      `option '--channel <channel>' argument 'eu west' is invalid. "eu west" is not a channel (1-128 of letters, digits and - _ . :).`,
    );
    expect(twoTags.stderr).toContain(
      `option '--tag <tag>' argument 'b' is invalid. one tag only: the API filters by one.`,
    );
    expect(reversed.stderr).toBe(
      'courier: --since (2026-03-01T00:00:00.000Z) must be before --until (2026-01-01T00:00:00.000Z)\n',
    );
    expect(zero.stderr).toContain(
      `option '--limit <n>' argument '0' is invalid. expected a positive whole number.`,
    );
    expect(unknown).toEqual({
      code: 1,
      stdout: '',
      stderr: 'courier: Application nope not found (not_found, HTTP 404)\n',
    });
  });
});
