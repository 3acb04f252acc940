/**
 * One chaos run: receivers and Courier in their own processes, messages published through the API
 * while workers are killed and PostgreSQL and the API restart, then every delivery checked.
 */
import { randomBytes } from 'node:crypto';
import { freePort } from '../test/support/ports.ts';
import { type ApiClient, createApp, createEndpoint, type PublishStats, publishAll } from './api.ts';
import { mulberry32, planEndpoints } from './catalog.ts';
import { Cluster, type CourierSettings } from './cluster.ts';
import { adminQuery, calmReceiver, readCourier, readReceiver, stateCounts } from './collect.ts';
import { injectFaults } from './faults.ts';
import { measure, mergeReports } from './measures.ts';
import { type Proc, spawnReceiver, stopProc, waitForOutput } from './processes.ts';
import { summaryTable } from './report.ts';
import { verify } from './verify.ts';

export interface ChaosOptions {
  messages: number;
  endpoints: number;
  /** How long messages are published while faults are injected. */
  publishSeconds: number;
  workers: number;
  receivers: number;
  maxKills: number;
  killEveryMs: readonly [number, number];
  pgRestart: boolean;
  apiRestart: boolean;
  /** Longest wait for every delivery to reach a terminal state after the load. */
  drainSeconds: number;
  seed: number;
  databaseUrl: string;
  command: string;
  log: (line: string) => void;
  /**
   * Receiver-side bunching tolerated by the rate check, in ms (default 0: any 1 s window). The
   * smoke run inside npm test shares two cores with the rest of the suite, whose load can stall a
   * receiver and bunch its arrival times; the full run keeps the strict check.
   */
  rateSlackMs?: number;
}

export interface ChaosResult {
  ok: boolean;
  table: string;
  violations: string[];
}

const MAX_ATTEMPTS = 6;
const REQUEST_TIMEOUT_MS = 2_000;
const LEASE_MS = 8_000;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export async function runChaos(o: ChaosOptions): Promise<ChaosResult> {
  const started = Date.now();
  const random = mulberry32(o.seed);
  const runId = randomBytes(4).toString('hex');
  const schema = `chaos_${runId}`;
  const plans = planEndpoints(o.endpoints, o.seed);
  // Reopened receivers need fixed ports below the ephemeral range (32768+).
  const portBase = 20_000 + Math.floor(random() * (12_000 - o.endpoints));
  const settings: CourierSettings = {
    databaseUrl: o.databaseUrl,
    schema,
    apiPort: await freePort(),
    adminToken: `chaos-admin-token-${runId}`,
    maxAttempts: MAX_ATTEMPTS,
    requestTimeoutMs: REQUEST_TIMEOUT_MS,
    leaseMs: LEASE_MS,
  };
  const cluster = new Cluster(settings, o.workers);
  const receivers: { proc: Proc; control: number }[] = [];
  await adminQuery(o.databaseUrl, `create schema ${schema}`);
  o.log(`schema ${schema}, seed ${o.seed}, ${o.endpoints} endpoints, ${o.messages} messages`);
  try {
    const epoch = Date.now();
    const ports = new Map<number, number>();
    for (let r = 0; r < o.receivers; r++) {
      const mine = plans.filter((p) => p.index % o.receivers === r);
      const proc = spawnReceiver(`receiver-${r}`, { endpoints: mine, epoch, portBase });
      receivers.push({ proc, control: 0 });
    }
    for (const receiver of receivers) {
      const line = await waitForOutput(receiver.proc, /^\{.*\}$/m, 60_000);
      const ready = JSON.parse(line[0]) as { control: number; ports: Record<string, number> };
      receiver.control = ready.control;
      for (const [index, port] of Object.entries(ready.ports)) ports.set(Number(index), port);
    }
    await cluster.start();
    o.log(`courier serve on port ${settings.apiPort}, ${o.workers} workers, ${o.receivers} receivers up`);

    const api: ApiClient = { base: `http://127.0.0.1:${settings.apiPort}`, token: settings.adminToken };
    const app = `chaos-${runId}`;
    await createApp(api, app);
    for (const plan of plans) {
      await createEndpoint(api, app, plan, `http://127.0.0.1:${ports.get(plan.index)}/hook/${plan.name}`);
    }

    const stats: PublishStats = { published: 0, retried: 0, tries: 0, ids: new Map(), failures: [] };
    const publishMs = o.publishSeconds * 1000;
    const loadStart = Date.now();
    let drainS = 0;
    const progress = setInterval(() => {
      stateCounts(o.databaseUrl, schema).then(
        (counts) => o.log(`published ${stats.published}; deliveries ${JSON.stringify(counts)}`),
        () => o.log(`published ${stats.published}; database unreachable`),
      );
    }, 10_000);
    try {
      await Promise.all([
        publishAll(
          api,
          app,
          { messages: o.messages, endpoints: o.endpoints, durationMs: publishMs, concurrency: 16, runId },
          stats,
        ),
        injectFaults(
          cluster,
          {
            untilMs: loadStart + publishMs,
            killEveryMs: o.killEveryMs,
            maxKills: o.maxKills,
            pgRestartAt: o.pgRestart ? loadStart + publishMs * 0.4 : null,
            apiRestartAt: o.apiRestart ? loadStart + publishMs * 0.65 : null,
          },
          random,
          o.log,
        ),
      ]);
      // Time-based faults (receivers down, bursts of 500s) stop, so the backlog can drain.
      await Promise.all(receivers.map((r) => calmReceiver(r.control)));
      const drainStart = Date.now();
      const deadline = drainStart + o.drainSeconds * 1000;
      for (;;) {
        const counts = await stateCounts(o.databaseUrl, schema).catch(() => null);
        const open = counts ? (counts.pending ?? 0) + (counts.in_flight ?? 0) + (counts.held ?? 0) : 1;
        if (open === 0 || Date.now() > deadline) break;
        await sleep(500);
      }
      drainS = Math.round((Date.now() - drainStart) / 1000);
    } finally {
      clearInterval(progress);
    }
    o.log(`load done; reading ${o.receivers} receiver logs and the database`);

    const report = mergeReports(await Promise.all(receivers.map((r) => readReceiver(r.control))));
    const courier = await readCourier(o.databaseUrl, schema);
    const v = verify({
      plans,
      messages: o.messages,
      published: stats.ids,
      courier,
      report,
      faults: cluster.faults,
      maxAttempts: MAX_ATTEMPTS,
      requestTimeoutMs: REQUEST_TIMEOUT_MS,
      leaseMs: LEASE_MS,
    });
    const m = measure(plans, report, o.rateSlackMs ?? 0);
    const violations = [
      ...stats.failures.map((f) => `publish failed: ${f}`),
      ...v.violations,
      ...m.violations,
    ];
    if (violations.length > 0) {
      o.log(`faults: ${cluster.faults.map((f) => `${f.kind} ${f.from}..${f.to} ${f.detail}`).join('; ')}`);
      for (const grave of cluster.graveyard) {
        if (/shutdown deadline|lease expired|failed/.test(grave)) o.log(grave);
      }
    }
    for (const proc of [...cluster.crashed(), ...receivers.map((r) => r.proc).filter((p) => !p.alive())]) {
      violations.push(`${proc.name} died on its own:\n${proc.output().slice(-2000)}`);
    }
    const table = summaryTable(
      {
        command: o.command,
        messages: o.messages,
        published: stats.published,
        publishRetried: stats.retried,
        publishTries: stats.tries,
        endpoints: o.endpoints,
        receivers: o.receivers,
        workers: o.workers,
        maxAttempts: MAX_ATTEMPTS,
        requestTimeoutMs: REQUEST_TIMEOUT_MS,
        leaseMs: LEASE_MS,
        faults: cluster.faults,
        durationS: Math.round((Date.now() - started) / 1000),
        drainS,
      },
      v,
      m,
    );
    return { ok: violations.length === 0, table, violations };
  } finally {
    await cluster.stop();
    await Promise.all(receivers.map((r) => stopProc(r.proc, 'SIGKILL')));
    await adminQuery(o.databaseUrl, `drop schema if exists ${schema} cascade`).catch((error) =>
      o.log(`dropping schema ${schema} failed: ${(error as Error).message}`),
    );
  }
}
