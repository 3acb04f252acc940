/**
 * `courier apps show` and `courier endpoints show` end to end: the real binary against a real API
 * on PostgreSQL, every field printed from what was set, read back as the API answers it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { timestamp } from '../../src/cli/format.ts';
import { type Receiver, startReceiver } from '../delivery/receiver.ts';
import { startApi, type TestApi, TOKEN } from '../e2e/support.ts';
import { publishAndDeliver } from './deliver.ts';
import { runCli } from './run.ts';

describe('showing one application or endpoint', () => {
  let api: TestApi;
  let receiver: Receiver;
  const cli = (...args: string[]) => runCli(args, { env: { COURIER_URL: api.url, COURIER_TOKEN: TOKEN } });
  const get = async (path: string) => (await api.request('GET', `/api/v1/app/${path}`)).body;

  beforeAll(async () => {
    api = await startApi();
    receiver = await startReceiver((req, res) => res.writeHead(req.url === '/gone' ? 410 : 204).end());
  });
  afterAll(async () => {
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
        "rate limit    50/s, its endpoints' default",
        `retry policy  its endpoints' overrides {"giveUp":{"maxAttempts":5}} (an endpoint's own over them)`,
        'metadata      plan=pro, region=eu',
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
    expect(lines.slice(1, 6)).toEqual([
      'uid           -',
      'name          Bare',
      'rate limit    -',
      'retry policy  none of its own',
      'metadata      none',
    ]);
    const missing = await cli('apps', 'show', 'nobody');
    expect(missing).toMatchObject({
      code: 1,
      stdout: '',
      stderr: expect.stringMatching(/^courier: Application nobody not found/),
    });
  });

  it('prints an endpoint field by field, its header names without values, and its last 28 days', async () => {
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
      'X-Tenant: 42',
      '--header',
      'Authorization: Bearer s3cret',
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
        'max in flight  4',
        'public only    no',
        'headers        Authorization (a credential), X-Tenant',
        'retry policy   its own overrides {"classifier":{"overrides":{"404":"permanent"}}} (`courier endpoints policy acme main`: all of it)',
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

    expect((await cli('endpoints', 'add', 'acme', `${receiver.url}/plain`, '--uid', 'plain')).code).toBe(0);
    const plain = (await cli('endpoints', 'show', 'acme', 'plain')).stdout.split('\n');
    expect(plain.slice(3, 14)).toEqual([
      'description    -',
      'status         enabled',
      'event types    all',
      'channels       all',
      'rate limit     50/s',
      'max in flight  10',
      'public only    no',
      'headers        none',
      'retry policy   none of its own (`courier endpoints policy acme plain`: what it follows)',
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
});
