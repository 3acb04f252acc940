/**
 * `courier apps show` and `courier endpoints show` end to end: the real binary against a real API
 * on PostgreSQL, every field printed from what was set, read back as the API answers it.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_PAGE } from '../../src/cli/api-client.ts';
import { timestamp } from '../../src/cli/format.ts';
import { type Receiver, startReceiver } from '../delivery/receiver.ts';
import { startApi, type TestApi, TOKEN } from '../e2e/support.ts';
import { publishAndDeliver } from './deliver.ts';
import { runCli } from './run.ts';

describe('showing one application or endpoint', () => {
  let api: TestApi;
  let receiver: Receiver;
  let dir: string;
  const cli = (...args: string[]) => runCli(args, { env: { COURIER_URL: api.url, COURIER_TOKEN: TOKEN } });
  const get = async (path: string) => (await api.request('GET', `/api/v1/app/${path}`)).body;

  beforeAll(async () => {
    api = await startApi();
    receiver = await startReceiver((req, res) => res.writeHead(req.url === '/gone' ? 410 : 204).end());
    dir = await mkdtemp(join(tmpdir(), 'courier-show-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
    await receiver.close();
    await api.close();
  });

  it('prints an application field by field, and as the API answers with --json', async () => {
    const made = await cli(
      'apps',
      'create',
      'Acme Corp',
      '--uid',
      'acme',
      '--rate-limit',
      '50',
      '--metadata',
      'plan=pro',
      '--metadata',
      'region=eu',
      '--metadata',
      'note=a=b, c',
      '--metadata',
      'empty=',
      '--retry-policy',
      '{"giveUp": {"maxAttempts": 5}}',
    );
    expect(made.code).toBe(0);
    const app = await get('acme');
    const shown = await cli('apps', 'show', 'acme');
    expect(shown).toEqual({
      code: 0,
      stderr: '',
      stdout: [
        `id            ${app.id}`,
        'uid           acme',
        'name          Acme Corp',
        'rate limit    50/s (endpoints made later start with it)',
        `retry policy  overrides for its endpoints {"giveUp":{"maxAttempts":5}} (each endpoint's own apply over them)`,
        'endpoints     none: `courier endpoints add acme <url>` adds one',
        // In the API's order; values that could be read as more than one pair are quoted.
        'metadata      note="a=b, c", plan=pro, empty="", region=eu',
        `created       ${timestamp(app.createdAt)}`,
        `updated       ${timestamp(app.updatedAt)}`,
        '',
      ].join('\n'),
    });
    expect(JSON.parse((await cli('apps', 'show', app.id, '--json')).stdout)).toEqual(app);

    expect((await cli('apps', 'create', 'Bare')).code).toBe(0);
    const bare = (await api.request('GET', '/api/v1/app')).body.data.find(
      (a: { name: string }) => a.name === 'Bare',
    );
    const lines = (await cli('apps', 'show', bare.id)).stdout.split('\n');
    expect(lines.slice(1, 7)).toEqual([
      'uid           -',
      'name          Bare',
      'rate limit    none (endpoints made later take COURIER_RATE_LIMIT)',
      "retry policy  no overrides (its endpoints follow the installation's policy and their own overrides)",
      `endpoints     none: \`courier endpoints add ${bare.id} <url>\` adds one`,
      'metadata      none',
    ]);
    const missing = await cli('apps', 'show', 'nobody');
    expect(missing).toMatchObject({
      code: 1,
      stdout: '',
      stderr: expect.stringMatching(/^courier: Application nobody not found/),
    });
  });

  // Some 30 s on a loaded host: 251 endpoints made, the CLI started eight times.
  it("counts an application's endpoints, those paused and disabled apart, one page at most", {
    timeout: 120_000,
  }, async () => {
    const counted = (await api.request('POST', '/api/v1/app', { body: { name: 'Counted' } })).body;
    const path = `/api/v1/app/${counted.id}/endpoint`;
    const ids: string[] = [];
    for (let i = 0; i < 4; i++) {
      ids.push(
        (await api.request('POST', path, { body: { url: `${receiver.url}/${i}` } })).body.id as string,
      );
    }
    const endpointsLine = async () =>
      (await cli('apps', 'show', counted.id)).stdout.split('\n').find((l) => l.startsWith('endpoints'));
    expect(await endpointsLine()).toBe(`endpoints     4: \`courier endpoints list ${counted.id}\``);
    expect((await api.request('POST', `${path}/${ids[0]}/pause`)).status).toBe(200);
    expect((await api.request('PATCH', `${path}/${ids[1]}`, { body: { disabled: true } })).status).toBe(200);
    expect((await api.request('PATCH', `${path}/${ids[2]}`, { body: { disabled: true } })).status).toBe(200);
    expect(await endpointsLine()).toBe(
      `endpoints     4 (1 paused, 2 disabled): \`courier endpoints list ${counted.id}\``,
    );
    // A page's worth counted; past it, not walked to the end: the oldest, paused, is left out.
    for (let i = 4; i < MAX_PAGE; i += 25) {
      const urls = Array.from({ length: Math.min(25, MAX_PAGE - i) }, (_, k) => `${receiver.url}/${i + k}`);
      await Promise.all(urls.map((url) => api.request('POST', path, { body: { url } })));
    }
    expect(await endpointsLine()).toBe(
      `endpoints     ${MAX_PAGE} (1 paused, 2 disabled): \`courier endpoints list ${counted.id}\``,
    );
    await api.request('POST', path, { body: { url: `${receiver.url}/more` } });
    expect(await endpointsLine()).toBe(
      `endpoints     more than ${MAX_PAGE} (2 disabled among the ${MAX_PAGE} newest): \`courier endpoints list ${counted.id}\``,
    );
    // The operator application's endpoints have commands of their own.
    expect((await cli('operational-endpoints', 'add', `${receiver.url}/ops`, '--uid', 'ops')).code).toBe(0);
    const opsLine = async () =>
      (await cli('apps', 'show', 'courier-operator')).stdout
        .split('\n')
        .find((l) => l.startsWith('endpoints'));
    expect(await opsLine()).toBe('endpoints     1: `courier operational-endpoints list`');
    expect((await cli('operational-endpoints', 'remove', 'ops', '--yes')).code).toBe(0);
    expect(await opsLine()).toBe('endpoints     none: `courier operational-endpoints add <url>` adds one');
  });

  it('prints an endpoint field by field, its header names without values, and its last 28 days', async () => {
    // With the BOM some editors write: the first line's name is still read.
    const headersFile = join(dir, 'headers');
    await writeFile(headersFile, '\uFEFFX-Tenant: 42\nAuthorization: Bearer s3cret\n');
    const added = await cli(
      'endpoints',
      'add',
      'acme',
      `${receiver.url}/gone`,
      '--uid',
      'main',
      '--description',
      'Billing events',
      '--event-type',
      'invoice.paid',
      '--event-type',
      'invoice.failed',
      '--channel',
      'eu',
      '--max-in-flight',
      '4',
      '--metadata',
      'team=billing',
      '--header',
      `@${headersFile}`,
      '--retry-policy',
      '{"classifier": {"overrides": {"404": "permanent"}}}',
    );
    expect(added.stderr).toBe('');
    // Answered 410: failed at once.
    await publishAndDeliver(api, 'acme', { eventType: 'invoice.paid', channels: ['eu'] });
    const endpoint = await get('acme/endpoint/main');
    const shown = await cli('endpoints', 'show', 'acme', 'main');
    expect(shown).toEqual({
      code: 0,
      stderr: '',
      stdout: [
        `id             ${endpoint.id}`,
        'uid            main',
        `url            ${receiver.url}/gone`,
        'description    Billing events',
        'status         enabled; failing since ' + timestamp(endpoint.failingSince),
        'event types    invoice.paid, invoice.failed',
        'channels       eu',
        'rate limit     50/s',
        // Set with the admin token: a bound on the customer's token.
        "max in flight  4 (the operator's bound for this URL: 4)",
        'public only    no',
        'headers        Authorization (a credential), X-Tenant (values: `courier endpoints headers acme main`)',
        'secret         `courier endpoints secret acme main` prints it',
        'retry policy   its own overrides {"classifier":{"overrides":{"404":"permanent"}}} (the policy it follows: `courier endpoints policy acme main`)',
        'metadata       team=billing',
        'last 28 days   delivered 0, pending 0, sending 0, failed 1',
        `created        ${timestamp(endpoint.createdAt)}`,
        `updated        ${timestamp(endpoint.updatedAt)}`,
        '',
      ].join('\n'),
    });
    expect(shown.stdout).not.toContain('s3cret');
    expect(JSON.parse((await cli('endpoints', 'show', 'acme', endpoint.id, '--json')).stdout)).toEqual(
      endpoint,
    );

    // A uid starting with - is named after --, so the hint can be run as printed; {} overrides nothing.
    const added2 = await cli(
      'endpoints',
      'add',
      'acme',
      `${receiver.url}/plain`,
      '--uid=-plain',
      '--retry-policy',
      '{}',
    );
    expect(added2.code).toBe(0);
    expect((await cli('endpoints', 'pause', 'acme', '--', '-plain')).code).toBe(0);
    const plain = (await cli('endpoints', 'show', 'acme', '--', '-plain')).stdout.split('\n');
    expect(plain.slice(3, 15)).toEqual([
      'description    -',
      'status         paused through the API; held by the operator',
      'event types    all',
      'channels       all',
      'rate limit     50/s',
      'max in flight  10',
      'public only    no',
      'headers        none (values: `courier endpoints headers -- acme -plain`)',
      'secret         `courier endpoints secret -- acme -plain` prints it',
      'retry policy   no overrides of its own (the policy it follows: `courier endpoints policy -- acme -plain`)',
      'metadata       none',
      'last 28 days   delivered 0, pending 0, sending 0, failed 0',
    ]);
  });

  it("says what an application's token may not read, and fails on an endpoint that is not there", async () => {
    const access = await api.request('POST', '/api/v1/auth/app-portal-access/acme', {
      body: { capabilities: ['ViewBase'] },
    });
    const token = access.body.token as string;
    const viewer = await runCli(['endpoints', 'show', 'acme', 'main'], {
      env: { COURIER_URL: api.url, COURIER_TOKEN: token },
    });
    expect(viewer.code).toBe(0);
    expect(viewer.stdout).toContain('\nheaders        not readable with this token\n');
    expect(viewer.stdout).toContain('\nlast 28 days   delivered 0, pending 0, sending 0, failed 1\n');
    const missing = await cli('endpoints', 'show', 'acme', 'nowhere');
    expect(missing).toMatchObject({
      code: 1,
      stdout: '',
      stderr: expect.stringMatching(/^courier: Endpoint nowhere not found/),
    });
  });

  it('prints what it read when a part fails: a route an older server lacks, an error', async () => {
    const endpoint = await get('acme/endpoint/main');
    const app = await get('acme');
    // An older Courier: the endpoint as it is, no stats route, headers and the endpoints' list failing.
    const older = http.createServer((req, res) => {
      const answer = (status: number, body: unknown) =>
        res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
      if (req.url === '/api/v1/app/acme') return answer(200, app);
      if (req.url?.startsWith(`/api/v1/app/${app.id}/endpoint?`))
        return answer(500, { code: 'internal', detail: 'the database is down' });
      if (req.url?.endsWith('/stats'))
        return answer(404, { code: 'not_found', detail: `No route for GET ${req.url}` });
      if (req.url?.endsWith('/headers'))
        return answer(500, { code: 'internal', detail: 'the database is down' });
      answer(200, endpoint);
    });
    await new Promise<void>((resolve) => older.listen(0, '127.0.0.1', resolve));
    try {
      const url = `http://127.0.0.1:${(older.address() as AddressInfo).port}`;
      const shown = await runCli(['endpoints', 'show', 'acme', 'main'], {
        env: { COURIER_URL: url, COURIER_TOKEN: TOKEN },
      });
      expect(shown.code).toBe(0);
      expect(shown.stdout).toMatch(/\nheaders {8}unavailable: the database is down \(internal, HTTP 500\)\n/);
      expect(shown.stdout).toContain('\nlast 28 days   not available from this server\n');
      expect(shown.stdout.startsWith(`id             ${endpoint.id}\n`)).toBe(true);
      const appShown = await runCli(['apps', 'show', 'acme'], {
        env: { COURIER_URL: url, COURIER_TOKEN: TOKEN },
      });
      expect(appShown.code).toBe(0);
      expect(appShown.stdout).toContain(
        '\nendpoints     unavailable: the database is down (internal, HTTP 500)\n',
      );
    } finally {
      await new Promise((resolve) => older.close(resolve));
    }
  });
});
