/**
 * `npm run bench`: every system in one run, against the same PostgreSQL and the same loopback
 * receiver, so the ratios compare like with like. `--smoke` runs a tiny version (used by npm test).
 * Writes bench/results/<stamp>.{json,md}, bench/results/latest.{json,md} and chart.svg.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { buildDist } from '../scripts/build.ts';
import { renderChart } from './chart.ts';
import { startCpuSampler } from './cpu.ts';
import { probeHostStalls } from './host-stalls.ts';
import { adminQuery, COURIER_PROCESS, courierCli, startReceiver } from './lib.ts';
import { type BenchReport, type HeadToHead, median, renderMarkdown } from './report.ts';
import { apiThroughput } from './scenarios/api.ts';
import {
  type CourierSetup,
  courierThroughput,
  drainOn,
  setupBacklog,
  type ThroughputResult,
} from './scenarios/courier.ts';
import { embeddedThroughput } from './scenarios/embedded.ts';
import { courierLatency } from './scenarios/latency.ts';
import { ceiling, graphile, pgBoss, rawSql } from './scenarios/peers.ts';

/** Head-to-head rounds after the full pass; their medians give the throughput ratios (five: single rounds differ by up to 25 % here). */
const ROUNDS = Number(process.env.COURIER_BENCH_ROUNDS ?? 5);

/**
 * pg-boss's work() calls, each a poller fetching 500 (bench/workers/pgboss.ts). In a trial on two
 * vCPUs one drained at 1,020/s, its timer's cap; 4, 6, 8, 12 and 16 at 2,900–4,750/s alike, the
 * machine's limit: a batch then takes longer than the 0.5 s interval, so no poller sleeps. Eight
 * keep the timer's cap (8,000/s) above any rate reached there.
 */
const PGBOSS_POLLERS = 8;
const PGBOSS_BATCH = 500;

/** The command lines of each head-to-head system's processes, for CPU per delivery. */
const SYSTEM_PROCESSES: Record<keyof HeadToHead, RegExp> = {
  courier: COURIER_PROCESS,
  rawSql: /bench\/workers\/raw-sql\.ts/,
  graphilePerformance: /bench\/workers\/graphile\.ts/,
  pgBoss: /bench\/workers\/pgboss\.ts/,
  courierBacklog: COURIER_PROCESS,
};

export async function runBench(options: {
  smoke: boolean;
  outDir?: string;
  log?: (line: string) => void;
}): Promise<BenchReport> {
  const log = options.log ?? ((line: string) => process.stdout.write(`${line}\n`));
  const n = options.smoke ? 300 : Number(process.env.COURIER_BENCH_MESSAGES ?? 20_000);
  const backlog = options.smoke ? 5_000 : 1_000_000;
  const latencySeconds = options.smoke ? 2 : 10;
  const receiver = await startReceiver();
  let backlogSetup: CourierSetup | undefined;
  const step = async <T>(name: string, fn: () => Promise<T>): Promise<T> => {
    const started = performance.now();
    const value = await fn();
    log(`${name}: ${JSON.stringify(value)} (${((performance.now() - started) / 1000).toFixed(1)} s)`);
    return value;
  };
  try {
    const version = (await adminQuery<{ server_version: string }>('show server_version'))[0]!.server_version;
    const report: BenchReport = {
      when: new Date().toISOString(),
      // Chosen now, after the full bench's build, for every Courier process of the run.
      courierCompiled: courierCli().compiled,
      machine: `${cpus().length} × ${cpus()[0]?.model ?? 'cpu'}, ${Math.round(totalmem() / 2 ** 30)} GiB, PostgreSQL ${version}, Node ${process.version}`,
      messages: n,
      payloadBytes: 1024,
      backlog,
      ceiling: await step('undici alone', () => ceiling(receiver, n)),
      rawSql: await step('raw SQL pipeline', () => rawSql(receiver, n)),
      courier1: await step('Courier, 1 worker', () => courierThroughput(receiver, n, 1)),
      // Right after the empty-queue run it is compared with; the rounds below compare them again.
      courierBacklog: await step(`Courier, 1 worker, ${backlog} scheduled for later`, async () => {
        backlogSetup = await setupBacklog(receiver, backlog);
        return drainOn(backlogSetup, receiver, n, 1);
      }),
      courier3: await step('Courier, 3 workers', () => courierThroughput(receiver, n, 3)),
      api: await step('Courier through its HTTP API', () => apiThroughput(receiver, n)),
      graphileDefault: await step('graphile-worker, defaults', () => graphile(receiver, n, 'default')),
      graphilePerformance: await step('graphile-worker, performance preset', () =>
        graphile(receiver, n, 'performance'),
      ),
      pgBoss: await step(`pg-boss, ${PGBOSS_POLLERS} pollers of ${PGBOSS_BATCH}`, () =>
        pgBoss(receiver, n, PGBOSS_BATCH, PGBOSS_POLLERS),
      ),
      pgBossSettings: { pollers: PGBOSS_POLLERS, batchSize: PGBOSS_BATCH },
      // As many messages as the PostgreSQL runs, published as many at once.
      embedded: await step('Courier on PGlite', () => embeddedThroughput(receiver, n)),
      latency: [],
      rounds: [],
      roundsCpu: [],
      roundsPeakRssMiB: [],
    };
    let rss: BenchReport['roundsPeakRssMiB'][number] = { courier: null, courierBacklog: null };
    /** A Courier drain of a round: its rate, its worker's peak RSS kept for the round. */
    const courierDrain = (system: keyof typeof rss, drain: () => Promise<ThroughputResult>) => async () => {
      const result = await drain();
      rss[system] = result.peakRssMiB;
      return result.deliveriesPerSec;
    };
    const systems: [keyof HeadToHead, () => Promise<number>][] = [
      ['courier', courierDrain('courier', () => courierThroughput(receiver, n, 1))],
      ['rawSql', () => rawSql(receiver, n)],
      ['graphilePerformance', () => graphile(receiver, n, 'performance')],
      ['pgBoss', () => pgBoss(receiver, n, PGBOSS_BATCH, PGBOSS_POLLERS)],
      // Drains on the same backlog, which stays scheduled for later: inserted once, not per round.
      ['courierBacklog', courierDrain('courierBacklog', () => drainOn(backlogSetup!, receiver, n, 1))],
    ];
    for (let round = 0; round < (options.smoke ? 1 : ROUNDS); round++) {
      const result = {} as HeadToHead;
      const cpu = {} as BenchReport['roundsCpu'][number];
      rss = { courier: null, courierBacklog: null };
      for (let i = 0; i < systems.length; i++) {
        const [name, run] = systems[(round + i) % systems.length]!;
        const sampler = startCpuSampler(SYSTEM_PROCESSES[name]);
        result[name] = await run();
        // The receiver still holds this drain's arrivals: the next run resets it.
        const drained = await receiver.stats();
        cpu[name] = sampler.stop(drained.first, drained.last, drained.count);
      }
      log(`head to head, round ${round + 1}: ${JSON.stringify(result)} cpu ${JSON.stringify(cpu)}`);
      report.rounds.push(result);
      report.roundsCpu.push(cpu);
      report.roundsPeakRssMiB.push(rss);
    }
    report.hostStalls = await step('host steadiness', async () => probeHostStalls(options.smoke ? 0.5 : 10));
    // Half the median of the rounds' Courier drains, not of one first-pass drain.
    const half = Math.round(median(report.rounds.map((h) => h.courier)) / 2);
    // 200/s is a reference the target does not name: the pipeline's latency on a machine not kept busy.
    for (const rate of options.smoke ? [100] : [200, 1_000, half]) {
      report.latency.push(
        await step(`latency at ${rate}/s`, () => courierLatency(receiver, rate, latencySeconds)),
      );
    }
    const outDir = options.outDir ?? new URL('./results/', import.meta.url).pathname;
    mkdirSync(outDir, { recursive: true });
    const markdown = renderMarkdown(report);
    const stamp = report.when.replace(/[:.]/g, '-');
    for (const name of [stamp, 'latest']) {
      writeFileSync(`${outDir}/${name}.json`, `${JSON.stringify(report, null, 2)}\n`);
      writeFileSync(`${outDir}/${name}.md`, markdown);
    }
    writeFileSync(`${outDir}/chart.svg`, renderChart(report));
    log(`\n${markdown}`);
    return report;
  } finally {
    await backlogSetup?.close();
    await receiver.stop();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const smoke = process.argv.includes('--smoke');
  // Courier's processes run compiled, as in production; the smoke run inside npm test leaves
  // dist/ alone (other test files start workers from it meanwhile).
  if (!smoke) buildDist();
  await runBench({ smoke, outDir: smoke ? new URL('./results/tmp/', import.meta.url).pathname : undefined });
  process.exit(0);
}
