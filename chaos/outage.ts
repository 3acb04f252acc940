/**
 * `npm run outage`: PostgreSQL goes away for a while under a running Courier (serve + one worker).
 * Checks that the API answers 503 JSON meanwhile, that the processes back off instead of spinning
 * (CPU and log lines are counted), and that delivery resumes by itself afterwards with no lost and
 * no double-counted attempt. Needs root (it stops and starts the cluster); always restarts it.
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { promisify } from 'node:util';
import pg from 'pg';
import { courierEnv } from './cluster.ts';
import { courierReady, type Proc, spawnCourier, stopProc } from './processes.ts';

const run = promisify(execFile);
const DATABASE_URL = process.env.COURIER_CHAOS_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const OUTAGE_MS = Number(process.env.COURIER_OUTAGE_MS ?? 20_000);
const TOKEN = `outage-${randomBytes(12).toString('hex')}`;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function pgctl(action: 'stop' | 'start'): Promise<void> {
  const version = readdirSync('/etc/postgresql')[0]!;
  await run('pg_ctlcluster', ['--skip-systemctl-redirect', version, 'main', action], { timeout: 60_000 });
}

async function admin(sql: string): Promise<unknown[]> {
  const client = new pg.Client(DATABASE_URL);
  await client.connect();
  try {
    return (await client.query(sql)).rows;
  } finally {
    await client.end();
  }
}

/** CPU time (ms) a process has used so far, from /proc. */
function cpuMs(proc: Proc): number {
  const fields = readFileSync(`/proc/${proc.child.pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

const lines = (proc: Proc) => proc.output().split('\n').length;

async function main(): Promise<number> {
  const seen = new Map<string, number>();
  const receiver = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const id = String(req.headers['webhook-id']);
      seen.set(id, (seen.get(id) ?? 0) + 1);
      res.end();
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  const receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;

  const schema = `outage_${randomBytes(4).toString('hex')}`;
  const port = 20_000 + Math.floor(Math.random() * 20_000);
  const env = courierEnv({
    databaseUrl: DATABASE_URL,
    schema,
    apiPort: port,
    adminToken: TOKEN,
    maxAttempts: 6,
    requestTimeoutMs: 2_000,
    leaseMs: 8_000,
  });
  const api = `http://127.0.0.1:${port}/api/v1`;
  const call = (method: string, path: string, body?: unknown) =>
    fetch(`${api}${path}`, {
      method,
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  const publish = async (n: number, from: number) => {
    for (let i = from; i < from + n; i++) {
      const res = await call('POST', '/app/outage/msg', { eventType: 'tick', payload: { i } });
      if (res.status !== 202) throw new Error(`publish answered ${res.status}: ${await res.text()}`);
    }
  };
  const waitDelivered = async (n: number, timeoutMs: number) => {
    const deadline = Date.now() + timeoutMs;
    while (seen.size < n && Date.now() < deadline) await sleep(100);
    return seen.size >= n;
  };

  const serve = spawnCourier('serve', 'serve', env);
  await courierReady(serve, 'serve');
  const worker = spawnCourier('worker', 'worker', env);
  await courierReady(worker, 'worker');
  const violations: string[] = [];
  const rows: [string, string][] = [];
  let stopped = false;
  try {
    await call('POST', '/app', { name: 'Outage', uid: 'outage' });
    await call('POST', '/app/outage/endpoint', { url: receiverUrl, uid: 'hook' });
    await publish(50, 0);
    if (!(await waitDelivered(50, 30_000))) violations.push('the first 50 messages were not delivered');

    const before = {
      serveCpu: cpuMs(serve),
      workerCpu: cpuMs(worker),
      serveLines: lines(serve),
      workerLines: lines(worker),
    };
    const outageStart = Date.now();
    await pgctl('stop');
    stopped = true;
    const statuses = new Map<string, number>();
    let probes = 0;
    while (Date.now() - outageStart < OUTAGE_MS) {
      for (const [what, res] of [
        ['GET /app', await call('GET', '/app')],
        ['POST /msg', await call('POST', '/app/outage/msg', { eventType: 'tick', payload: { lost: true } })],
        ['GET /health/ready', await fetch(`http://127.0.0.1:${port}/health/ready`)],
      ] as const) {
        probes++;
        const text = await res.text();
        const code = res.status === 503 ? (JSON.parse(text) as { code?: string }).code : undefined;
        const key = `${what} → ${res.status}${code ? ` ${code}` : ''}`;
        statuses.set(key, (statuses.get(key) ?? 0) + 1);
        if (res.status !== 503 || code !== 'database_unavailable') {
          violations.push(`${what} during the outage answered ${res.status} ${text.slice(0, 120)}`);
        }
      }
      await sleep(500);
    }
    const outageMs = Date.now() - outageStart;
    const after = {
      serveCpu: cpuMs(serve),
      workerCpu: cpuMs(worker),
      serveLines: lines(serve),
      workerLines: lines(worker),
    };
    await pgctl('start');
    stopped = false;
    const restored = Date.now();

    await publish(50, 50);
    const resumed = await waitDelivered(100, 60_000);
    if (!resumed) violations.push(`only ${seen.size} of 100 messages delivered after the outage`);
    const [counts] = (await admin(
      `select count(*)::int as attempts, sum(attempts)::int as counted,
              count(*) filter (where state <> 'delivered')::int as unfinished
         from ${schema}.courier_delivery_states`,
    )) as { attempts: number; counted: number; unfinished: number }[];
    const [att] = (await admin(`select count(*)::int as n from ${schema}.courier_attempts`)) as {
      n: number;
    }[];
    const requests = [...seen.values()].reduce((a, b) => a + b, 0);
    if (att!.n !== requests) violations.push(`${att!.n} attempts recorded, ${requests} requests seen`);
    if (counts!.unfinished !== 0) violations.push(`${counts!.unfinished} deliveries unfinished`);

    const workerCpuShare = (after.workerCpu - before.workerCpu) / outageMs;
    const serveCpuShare = (after.serveCpu - before.serveCpu) / outageMs;
    if (workerCpuShare > 0.05)
      violations.push(`worker used ${(workerCpuShare * 100).toFixed(1)}% CPU while the database was down`);
    rows.push(
      ['Outage', `${(outageMs / 1000).toFixed(1)} s with PostgreSQL stopped; ${probes} API probes`],
      ...[...statuses].map(([k, v]): [string, string] => ['API answer', `${k} ×${v}`]),
      [
        'CPU while down',
        `worker ${(workerCpuShare * 100).toFixed(2)}%, serve ${(serveCpuShare * 100).toFixed(2)}% of one core`,
      ],
      [
        'Log lines while down',
        `worker ${after.workerLines - before.workerLines}, serve ${after.serveLines - before.serveLines}`,
      ],
      [
        'Recovery',
        resumed
          ? `100 of 100 delivered ${((Date.now() - restored) / 1000).toFixed(1)} s after restart`
          : 'incomplete',
      ],
      [
        'Attempts',
        `${att!.n} recorded, ${requests} requests seen by the receiver, ${counts!.counted} counted on deliveries`,
      ],
      ['Violations', String(violations.length)],
    );
  } finally {
    if (stopped) await pgctl('start').catch(() => {});
    await stopProc(worker);
    await stopProc(serve);
    receiver.close();
    await admin(`drop schema if exists ${schema} cascade`).catch(() => {});
  }
  process.stdout.write(
    `\n| Check | Figure |\n|---|---|\n${rows.map(([a, b]) => `| ${a} | ${b} |`).join('\n')}\n`,
  );
  for (const v of violations) process.stdout.write(`VIOLATION: ${v}\n`);
  return violations.length === 0 ? 0 : 1;
}

process.exit(await main());
