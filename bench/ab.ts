/**
 * `npm run bench:ab`: worker variants drain the same queue in alternating order, so a change is
 * measured against the host's drift rather than across it. Each drain prefills a fresh schema,
 * starts one worker and times it from the first to the last arrival at the receiver, with the CPU
 * per delivery from /proc; a variant run with --trace-gc also gets its collector's totals.
 *
 *   npm run bench:ab -- [--messages 20000] [--rounds 6] VARIANT...
 *   npm run bench:ab -- --latency 1000 [--seconds 10] [--rounds 6] VARIANT...
 *   npm run bench:ab -- --api [--messages 20000] [--rounds 6] VARIANT...
 *   VARIANT = name[|ENV=value,…[|node flags[|another checkout's bin/courier.js]]]
 *
 * With --latency, each run publishes at that fixed rate instead of draining a prefilled queue, and
 * reports publish-to-receiver p50 and p99 (after an untimed warm-up: warmupSeconds) and the CPU per message.
 * With --api, each run is `courier serve` (API and worker in one process) taking the messages as
 * POSTs from 32 clients: the publish rate (202 answers), the delivery rate meanwhile, and the CPU
 * per message (its `worker` figure is `courier serve`'s).
 *
 * e.g. 'base' 'c256|COURIER_WORKER_CONCURRENCY=256' 'gc||--trace-gc' 'old|||/tmp/old/bin/courier.js'
 */
import { parseArgs } from 'node:util';
import { buildDist } from '../scripts/build.ts';
import { type CpuPerDelivery, startCpuSampler } from './cpu.ts';
import {
  analyzeSchema,
  type BenchReceiver,
  COURIER_PROCESS,
  cliWording,
  courierCli,
  startReceiver,
} from './lib.ts';
import { fieldMedians, median } from './report.ts';
import { apiThroughput } from './scenarios/api.ts';
import { publishMany, setupCourier, startWorkers, type WorkerCommand } from './scenarios/courier.ts';
import { courierLatency } from './scenarios/latency.ts';
import { type GcSummary, summarizeTraceGc } from './trace-gc.ts';

export interface Variant extends WorkerCommand {
  name: string;
  env: Record<string, string>;
}

export function parseVariant(spec: string): Variant {
  const [name = '', env = '', flags = '', cli = ''] = spec.split('|');
  if (!/^[\w.-]+$/.test(name))
    throw new Error(`variant "${spec}": the name must be letters, digits, . _ or -`);
  const pairs = env.split(',').filter(Boolean);
  for (const pair of pairs)
    if (!/^[A-Z_][A-Z0-9_]*=/.test(pair)) throw new Error(`variant "${spec}": "${pair}" is not NAME=value`);
  return {
    name,
    env: Object.fromEntries(
      pairs.map((pair) => [pair.slice(0, pair.indexOf('=')), pair.slice(pair.indexOf('=') + 1)]),
    ),
    nodeFlags: flags.split(' ').filter(Boolean),
    cli: cli || undefined,
  };
}

export interface Drain {
  variant: string;
  round: number;
  /** In a latency run, the publish rate achieved. */
  deliveriesPerSec: number;
  cpu: CpuPerDelivery | null;
  gc: GcSummary | null;
  /** Latency runs only. */
  latency?: { p50Ms: number; p99Ms: number };
  /** API runs only: 202 answers a second. */
  publishPerSec?: number;
}

export interface LatencyLoad {
  ratePerSec: number;
  seconds: number;
}

async function drain(receiver: BenchReceiver, variant: Variant, n: number, round: number): Promise<Drain> {
  const setup = await setupCourier(receiver);
  try {
    await publishMany(setup, n);
    await analyzeSchema(setup.schema);
    await receiver.reset();
    const [worker] = await startWorkers(setup.schema, 1, variant.env, variant);
    const sampler = startCpuSampler(COURIER_PROCESS);
    let deliveriesPerSec: number;
    let cpu: CpuPerDelivery | null;
    try {
      deliveriesPerSec = await receiver.rate(n);
      const stats = await receiver.stats();
      cpu = sampler.stop(stats.first, stats.last, stats.count);
    } finally {
      // Also when the drain times out: a worker left running would skew every later drain.
      await worker!.stop();
    }
    const gc = variant.nodeFlags?.includes('--trace-gc') ? summarizeTraceGc(worker!.output()) : null;
    return { variant: variant.name, round, deliveriesPerSec, cpu, gc };
  } finally {
    await setup.close();
  }
}

async function latencyRun(
  receiver: BenchReceiver,
  variant: Variant,
  load: LatencyLoad,
  round: number,
): Promise<Drain> {
  const r = await courierLatency(receiver, load.ratePerSec, load.seconds, {
    env: variant.env,
    command: variant,
  });
  return {
    variant: variant.name,
    round,
    deliveriesPerSec: r.achievedPerSec,
    cpu: r.cpu,
    gc: null,
    latency: { p50Ms: r.p50Ms, p99Ms: r.p99Ms },
  };
}

async function apiRun(receiver: BenchReceiver, variant: Variant, n: number, round: number): Promise<Drain> {
  const r = await apiThroughput(receiver, n, { env: variant.env, command: variant });
  return {
    variant: variant.name,
    round,
    deliveriesPerSec: r.deliveriesPerSec,
    publishPerSec: r.publishPerSec,
    cpu: r.cpu,
    gc: null,
  };
}

/** Every variant once per round, the order reversed every other round. */
export async function runAb(
  variants: Variant[],
  options: {
    messages: number;
    rounds: number;
    latency?: LatencyLoad;
    api?: boolean;
    log?: (line: string) => void;
  },
): Promise<Drain[]> {
  const log = options.log ?? ((line: string) => process.stdout.write(`${line}\n`));
  const receiver = await startReceiver();
  const drains: Drain[] = [];
  try {
    for (let round = 1; round <= options.rounds; round++) {
      for (const variant of round % 2 ? variants : [...variants].reverse()) {
        const d = options.latency
          ? await latencyRun(receiver, variant, options.latency, round)
          : options.api
            ? await apiRun(receiver, variant, options.messages, round)
            : await drain(receiver, variant, options.messages, round);
        drains.push(d);
        log(describe(d));
      }
    }
  } finally {
    await receiver.stop();
  }
  log('medians:');
  for (const v of variants) log(describe(medianOf(drains.filter((d) => d.variant === v.name))));
  return drains;
}

function medianOf(drains: Drain[]): Drain {
  return {
    variant: drains[0]!.variant,
    round: 0,
    deliveriesPerSec: median(drains.map((d) => d.deliveriesPerSec)),
    cpu: fieldMedians(drains.map((d) => d.cpu)),
    gc: fieldMedians(drains.map((d) => d.gc)),
    latency: fieldMedians(drains.map((d) => d.latency ?? null)) ?? undefined,
    publishPerSec:
      drains[0]!.publishPerSec === undefined ? undefined : median(drains.map((d) => d.publishPerSec!)),
  };
}

function describe(d: Drain): string {
  const what = d.latency
    ? `p50 ${d.latency.p50Ms.toFixed(2)} ms, p99 ${d.latency.p99Ms.toFixed(2)} ms at ${Math.round(d.deliveriesPerSec)}/s`
    : d.publishPerSec !== undefined
      ? `publish ${Math.round(d.publishPerSec)}/s, delivered ${Math.round(d.deliveriesPerSec)}/s`
      : `${Math.round(d.deliveriesPerSec)}/s`;
  const head = `${d.round ? `round ${d.round}` : 'median'} ${d.variant}: ${what}`;
  const cpu = d.cpu
    ? `, µs per ${d.latency || d.publishPerSec !== undefined ? 'message' : 'delivery'}: ${d.publishPerSec !== undefined ? 'courier serve' : 'worker'} ${d.cpu.systemUs}, PostgreSQL ${d.cpu.postgresUs}, receiver ${d.cpu.receiverUs}, machine ${d.cpu.totalUs} (${d.cpu.busyPct} % busy, ${d.cpu.stealPct} % steal)`
    : '';
  const gc = d.gc
    ? `; GC: ${d.gc.scavenges} scavenges ${Math.round(d.gc.scavengeMs)} ms, ${d.gc.markCompacts} mark-compacts ${Math.round(d.gc.markCompactMs)} ms, ${Math.round(d.gc.promotedMb)} MB promoted`
    : '';
  return head + cpu + gc;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: {
      messages: { type: 'string', default: '20000' },
      rounds: { type: 'string', default: '6' },
      latency: { type: 'string' },
      seconds: { type: 'string', default: '10' },
      api: { type: 'boolean', default: false },
    },
  });
  const messages = Number(values.messages);
  const rounds = Number(values.rounds);
  if (!Number.isInteger(messages) || messages < 2 || !Number.isInteger(rounds) || rounds < 1) {
    process.stderr.write('bench:ab: --messages must be an integer ≥ 2 and --rounds ≥ 1\n');
    process.exit(2);
  }
  const ratePerSec = Number(values.latency);
  const seconds = Number(values.seconds);
  if (values.latency !== undefined && values.api) {
    process.stderr.write('bench:ab: --api and --latency are two kinds of run: give one\n');
    process.exit(2);
  }
  if (values.latency !== undefined && !(ratePerSec > 0 && seconds >= 2)) {
    process.stderr.write('bench:ab: --latency must be a rate > 0 a second, and --seconds ≥ 2\n');
    process.exit(2);
  }
  let variants: Variant[];
  try {
    variants = (positionals.length ? positionals : ['base']).map(parseVariant);
  } catch (error) {
    process.stderr.write(`bench:ab: ${(error as Error).message}\n`);
    process.exit(2);
  }
  const names = variants.map((v) => v.name);
  const twice = names.find((name, i) => names.indexOf(name) !== i);
  if (twice) {
    process.stderr.write(`bench:ab: two variants are named "${twice}"; their medians would mix\n`);
    process.exit(2);
  }
  buildDist();
  // Taken now, after the build, for every drain of the base (a variant's own cli decides at each start).
  process.stdout.write(`Courier's CLI: ${cliWording(courierCli())}\n`);
  await runAb(variants, {
    messages,
    rounds,
    latency: values.latency === undefined ? undefined : { ratePerSec, seconds },
    api: values.api,
  });
  process.exit(0);
}
