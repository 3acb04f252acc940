/** The fault schedule: kill -9 a worker every few seconds, restart PostgreSQL once, the API once. */
import { execFile } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { promisify } from 'node:util';
import type { Cluster } from './cluster.ts';

const run = promisify(execFile);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export interface FaultPlan {
  /** Faults stop being injected at this instant (ms). */
  untilMs: number;
  killEveryMs: readonly [number, number];
  maxKills: number;
  /** Instants (ms) of the one PostgreSQL restart and the one API restart; null: none. */
  pgRestartAt: number | null;
  apiRestartAt: number | null;
}

/** Restarts the local PostgreSQL cluster (fast shutdown: every connection is cut). */
export async function restartPostgres(): Promise<void> {
  const version = readdirSync('/etc/postgresql')[0];
  if (!version) throw new Error('no PostgreSQL cluster under /etc/postgresql');
  await run('pg_ctlcluster', ['--skip-systemctl-redirect', version, 'main', 'restart'], { timeout: 60_000 });
}

export async function injectFaults(
  cluster: Cluster,
  plan: FaultPlan,
  random: () => number,
  log: (line: string) => void,
): Promise<void> {
  let kills = 0;
  let pgDone = plan.pgRestartAt === null;
  let apiDone = plan.apiRestartAt === null;
  const [min, max] = plan.killEveryMs;
  while (Date.now() < plan.untilMs) {
    const wait = Math.min(min + random() * (max - min), plan.untilMs - Date.now());
    await sleep(Math.max(0, wait));
    if (Date.now() >= plan.untilMs) break;
    if (!pgDone && Date.now() >= plan.pgRestartAt!) {
      pgDone = true;
      const from = Date.now();
      log('fault: restarting PostgreSQL');
      await restartPostgres();
      cluster.faults.push({ kind: 'pg restart', from, to: Date.now(), detail: `${Date.now() - from} ms` });
      log(`fault: PostgreSQL back after ${Date.now() - from} ms`);
    } else if (!apiDone && Date.now() >= plan.apiRestartAt!) {
      apiDone = true;
      log('fault: restarting the API process (courier serve)');
      await cluster.restartApi();
      const last = cluster.faults[cluster.faults.length - 1]!;
      log(`fault: API back after ${last.to - last.from} ms`);
    } else if (kills < plan.maxKills) {
      kills++;
      await cluster.killWorker(random);
      log(`fault: kill -9 ${cluster.faults[cluster.faults.length - 1]!.detail} (#${kills})`);
    }
  }
}
