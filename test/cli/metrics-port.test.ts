import { spawn, spawnSync } from 'node:child_process';
import { type AddressInfo, createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.ts';
import { startReceiver } from '../delivery/receiver.ts';
import { openTestDatabase, TEST_DATABASE_URL, type TestDatabase } from '../support/databases.ts';
import { makeApp, makeEndpoint, publishJson } from '../support/fixtures.ts';
import { freePort } from '../support/ports.ts';
import { killStrayWorkers, spawnWorker, stopWorker } from '../support/worker-process.ts';

const CLI = fileURLToPath(new URL('../../bin/courier.js', import.meta.url));

describe('COURIER_METRICS_PORT', () => {
  let t: TestDatabase | undefined;
  afterEach(async () => {
    await killStrayWorkers();
    await t?.drop();
    t = undefined;
  });

  it('makes `courier worker` answer GET /metrics there, and nothing is kept without it', async () => {
    t = await openTestDatabase('pg');
    const port = await freePort();
    const worker = await spawnWorker(t.schema!, { COURIER_METRICS_PORT: String(port) });
    const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    expect(text).toMatch(/\ncourier_worker_in_flight_requests 0\n/);
    expect(text).toMatch(/\ncourier_queue_lag_seconds 0\n/);
    expect(text).toMatch(/\ncourier_queue_deliveries{state="due"} 0\n/);
    expect(text).toContain('\nprocess_resident_memory_bytes ');
    expect(worker.output()).toContain(`"address":"http://127.0.0.1:${port}/metrics"`);
    expect(await stopWorker(worker)).toBe(0);
    expect(loadConfig({}).metrics).toBeNull();
    expect(loadConfig({ COURIER_METRICS_PORT: '9464' }).metrics).toEqual({
      host: '127.0.0.1',
      port: 9464,
      queue: true,
      endpoints: 0,
    });
  });

  it('with COURIER_METRICS_ENDPOINTS, names the endpoints `courier worker` attempts, so many at most', async () => {
    t = await openTestDatabase('pg');
    const receiver = await startReceiver((_req, res) => res.end());
    try {
      const now = Date.now();
      const app = await makeApp(t.db, now);
      const endpoints = [
        await makeEndpoint(t.db, app.id, now, { url: `${receiver.url}/a` }),
        await makeEndpoint(t.db, app.id, now, { url: `${receiver.url}/b` }),
      ];
      const port = await freePort();
      const worker = await spawnWorker(t.schema!, {
        COURIER_METRICS_PORT: String(port),
        COURIER_METRICS_ENDPOINTS: '1',
      });
      const scrape = async (done: (text: string) => boolean) => {
        let text = '';
        for (let i = 0; i < 200 && !done(text); i++) {
          await new Promise((resolve) => setTimeout(resolve, 50));
          text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
        }
        return text;
      };
      const other = (n: number) => (text: string) =>
        text.includes(`courier_endpoint_attempts_total{endpoint_id="other",result="delivered"} ${n}\n`);
      // Both first attempts under other: the one given the place is shown at 0 before it counts.
      await publishJson(t.db, app.id, now, { n: 1 });
      expect(other(2)(await scrape(other(2)))).toBe(true);
      await publishJson(t.db, app.id, now, { n: 2 });
      const text = await scrape(
        (text) => other(3)(text) && /endpoint_id="ep_\w+",result="delivered"\} 1\n/.test(text),
      );
      expect(await stopWorker(worker)).toBe(0);
      const named = endpoints.filter((e) =>
        text.includes(`courier_endpoint_attempts_total{endpoint_id="${e.id}",result="delivered"} 1\n`),
      );
      expect(named).toHaveLength(1);
      expect(text).toContain('courier_endpoint_attempts_total{endpoint_id="other",result="delivered"} 3\n');
      // The one named, with its application, read from the database at the scrape.
      expect(text.match(/^courier_endpoint_info\{.*$/gm)).toEqual([
        `courier_endpoint_info{endpoint_id="${named[0]!.id}",endpoint_uid="",app_id="${app.id}",app_uid=""} 1`,
      ]);
    } finally {
      await receiver.close();
    }
    expect(
      loadConfig({ COURIER_METRICS_PORT: '9464', COURIER_METRICS_ENDPOINTS: '2000' }).metrics?.endpoints,
    ).toBe(2_000);
  });

  it("makes `courier serve` count its API's requests there too", async () => {
    t = await openTestDatabase('pg');
    const [apiPort, metricsPort] = [await freePort(), await freePort()];
    const child = spawn(process.execPath, [CLI, 'serve'], {
      env: {
        ...process.env,
        COURIER_DATABASE_URL: TEST_DATABASE_URL,
        COURIER_SCHEMA: t.schema!,
        COURIER_PORT: String(apiPort),
        COURIER_ADMIN_TOKEN: 'metrics-test-token-0123',
        COURIER_METRICS_PORT: String(metricsPort),
        COURIER_METRICS_QUEUE: 'off',
        COURIER_LOG_LEVEL: 'warn',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk) => (output += chunk));
    child.stderr.on('data', (chunk) => (output += chunk));
    const exited = new Promise((resolve) => child.once('exit', resolve));
    try {
      for (let i = 0; i < 600 && !output.includes('API: '); i++) await new Promise((r) => setTimeout(r, 50));
      expect(output).toContain('API: ');
      expect((await fetch(`http://127.0.0.1:${apiPort}/api/v1/health`)).status).toBe(204);
      const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
      expect(text).toContain(
        'courier_http_requests_total{method="GET",route="/api/v1/health",status_code="204"} 1\n',
      );
      expect(text).toMatch(/\ncourier_worker_in_flight_requests 0\n/);
      // COURIER_METRICS_QUEUE=off: the queue's figures are neither read nor shown.
      expect(text).not.toContain('courier_queue_');
    } finally {
      child.kill('SIGTERM');
    }
    expect(await exited).toBe(0);
  });

  it('stops `courier worker` at start when its port is taken, saying so', async () => {
    const blocker = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = blocker.address() as AddressInfo;
      const run = spawnSync(process.execPath, [CLI, 'worker'], {
        env: { ...process.env, COURIER_DATABASE_URL: TEST_DATABASE_URL, COURIER_METRICS_PORT: String(port) },
        encoding: 'utf8',
        timeout: 30_000,
      });
      expect(run.status).toBe(1);
      expect(run.stderr + run.stdout).toContain('EADDRINUSE');
      expect(run.stderr + run.stdout).not.toContain('worker started');
    } finally {
      await new Promise((resolve) => blocker.close(resolve));
    }
  });

  it('refuses what is not a port, naming the setting', () => {
    const run = spawnSync(process.execPath, [CLI, 'worker'], {
      env: { ...process.env, COURIER_DATABASE_URL: TEST_DATABASE_URL, COURIER_METRICS_PORT: 'prometheus' },
      encoding: 'utf8',
      timeout: 30_000,
    });
    expect(run.status).not.toBe(0);
    expect(run.stderr).toContain(
      'COURIER_METRICS_PORT: expected a whole number from 0 to 65535, got "prometheus"',
    );
  });
});
