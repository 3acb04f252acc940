/** The benchmark's report: the figures of one run, its Markdown table and the ratios against targets. */
import type { CpuPerDelivery } from './cpu.ts';
import { type HostStalls, SLOW_FACTOR } from './host-stalls.ts';
import type { ApiResult } from './scenarios/api.ts';
import type { ThroughputResult } from './scenarios/courier.ts';
import type { EmbeddedResult } from './scenarios/embedded.ts';
import type { LatencyResult } from './scenarios/latency.ts';

export interface BenchReport {
  when: string;
  machine: string;
  messages: number;
  payloadBytes: number;
  /** Deliveries scheduled for later during the courierBacklog runs. */
  backlog: number;
  ceiling: number;
  rawSql: number;
  courier1: ThroughputResult;
  courier3: ThroughputResult;
  /** `courier serve` with messages POSTed to its API, publishing and delivering at once. */
  api: ApiResult;
  courierBacklog: ThroughputResult;
  graphileDefault: number;
  graphilePerformance: number;
  pgBoss: number;
  /** pg-boss's work() calls (each a poller) and the jobs each fetches at once. */
  pgBossSettings: { pollers: number; batchSize: number };
  embedded: EmbeddedResult;
  latency: LatencyResult[];
  /** The idle host's CPU steadiness, measured before the latency runs (absent in older reports). */
  hostStalls?: HostStalls;
  /** Whether Courier's processes ran the compiled CLI (dist/), not its sources through tsx (absent in older reports). */
  courierCompiled?: boolean;
  /**
   * Head-to-head rounds: Courier (1 worker), the raw SQL pipeline, graphile-worker's performance
   * preset, pg-boss and Courier on top of the backlog, measured back to back, in rotating order.
   * The host drifts by up to 1.5x within minutes, so the throughput ratios are the medians of the
   * per-round ratios.
   */
  rounds: HeadToHead[];
  /** CPU per delivery of each system during each round's drain (null where /proc was unreadable). */
  roundsCpu: Record<keyof HeadToHead, CpuPerDelivery | null>[];
  /** VmHWM of each round's Courier workers. */
  roundsPeakRssMiB: { courier: number | null; courierBacklog: number | null }[];
}

export interface HeadToHead {
  courier: number;
  rawSql: number;
  graphilePerformance: number;
  pgBoss: number;
  /** Courier, 1 worker, with the backlog scheduled for later. */
  courierBacklog: number;
}

const HEAD_TO_HEAD_NAMES: Record<keyof HeadToHead, string> = {
  courier: 'Courier, 1 worker',
  rawSql: 'raw SQL pipeline',
  graphilePerformance: 'graphile-worker, performance',
  pgBoss: 'pg-boss',
  courierBacklog: 'Courier, 1 worker, backlog',
};

/** The idle host's stalls, which set a floor under any p99 measured on it. */
function hostStallsLine(h: HostStalls | undefined): string[] {
  if (!h) return [];
  return [
    `Host steadiness: a fixed computation timed for ${h.seconds} s on the idle machine (median ${fmt2(h.unitUs)} µs a unit) ran ` +
      `≥ ${SLOW_FACTOR}× slower than usual in ${h.windows} stretches, ${fmt2(h.stalledPct)} % of the time, the longest ${fmt2(h.longestMs)} ms ` +
      `(worst unit ${fmt2(h.worstFactor)}× slower). Messages in flight during a stretch are late by about its length: where the stretches ` +
      'add up to more than 1 % of the time, the p99 above measures the host.',
    '',
  ];
}

/** Results written before the bench read steal time have none. */
const steal = (c: CpuPerDelivery) => (c.stealPct === undefined ? '—' : `${fmt(c.stealPct)} %`);

/** One row per system: the median over the rounds of each figure of its CPU per delivery. */
function cpuTable(r: BenchReport): string[] {
  const rows = (Object.keys(HEAD_TO_HEAD_NAMES) as (keyof HeadToHead)[]).flatMap((system) => {
    const measured = r.roundsCpu.map((c) => c[system]).filter((c): c is CpuPerDelivery => c !== null);
    if (measured.length === 0) return [];
    const m = fieldMedians(measured) as CpuPerDelivery;
    return [
      `| ${HEAD_TO_HEAD_NAMES[system]} | ${fmt(m.receiverUs)} | ${fmt(m.systemUs)} | ${fmt(m.postgresUs)} | ${fmt(m.totalUs)} | ${fmt(m.busyPct)} % | ${steal(m)} |`,
    ];
  });
  if (rows.length === 0) return [];
  return [
    'CPU per delivery during the drains of these rounds, in µs (medians; read from /proc every 100 ms; the whole machine includes the bench driver and the kernel):',
    '',
    '| System | receiver | worker | PostgreSQL | whole machine | machine busy | of it, taken by the host (steal) |',
    '|---|---:|---:|---:|---:|---:|---:|',
    ...rows,
    '',
  ];
}

export function median(values: number[]): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/** Each numeric field's own median over records of one shape; null when any record is missing. */
export function fieldMedians<T extends object>(records: (T | null)[]): T | null {
  if (records.length === 0 || records.some((r) => r === null)) return null;
  const rows = records as T[];
  return Object.fromEntries(
    Object.keys(rows[0]!).map((k) => [k, median(rows.map((r) => r[k as keyof T] as number))]),
  ) as T;
}

/** Courier ÷ a peer: the median of the rounds' ratios, or the single run's when there are none. */
function versus(report: BenchReport, peer: (h: HeadToHead) => number, single: number): number {
  if (report.rounds.length === 0) return courierBest(report) / single;
  return median(report.rounds.map((h) => h.courier / peer(h)));
}

export interface Ratio {
  name: string;
  value: number;
  target: number;
  /** true when higher is better. */
  atLeast: boolean;
}

export function courierBest(report: BenchReport): number {
  return Math.max(report.courier1.deliveriesPerSec, report.courier3.deliveriesPerSec);
}

export function ratios(report: BenchReport): Ratio[] {
  const best = courierBest(report);
  const at1000 = report.latency.find((l) => l.offeredPerSec === 1000);
  const list: Ratio[] = [
    {
      name: 'Courier ÷ graphile-worker (performance preset)',
      value: versus(report, (h) => h.graphilePerformance, report.graphilePerformance),
      target: 1.5,
      atLeast: true,
    },
    {
      name: 'Courier ÷ graphile-worker (defaults)',
      value: best / report.graphileDefault,
      target: 0,
      atLeast: true,
    },
    {
      name: 'Courier ÷ pg-boss',
      value: versus(report, (h) => h.pgBoss, report.pgBoss),
      target: 3,
      atLeast: true,
    },
    {
      name: 'Courier ÷ raw SQL pipeline',
      value: versus(report, (h) => h.rawSql, report.rawSql),
      target: 0.8,
      atLeast: true,
    },
    { name: 'Courier ÷ undici ceiling', value: best / report.ceiling, target: 0, atLeast: true },
    {
      name: 'throughput with backlog ÷ empty queue (1 worker)',
      value:
        report.rounds.length === 0
          ? report.courierBacklog.deliveriesPerSec / report.courier1.deliveriesPerSec
          : median(report.rounds.map((h) => h.courierBacklog / h.courier)),
      target: 0.9,
      atLeast: true,
    },
    {
      // The issue's 200 MB, in the MiB that /proc reports.
      name: 'worker peak RSS, the largest of every worker process on PostgreSQL (MiB; 200 MB)',
      value: Math.max(...workerRss(report).map(([, mib]) => mib ?? 0)),
      target: Math.round((200e6 / 2 ** 20) * 10) / 10,
      atLeast: false,
    },
    {
      name: 'WAL per message, its whole life: publish, delivery, its delivered row vacuumed (bytes; 3 KB)',
      value: report.courier1.walBytesPerMessage,
      target: 3072,
      atLeast: false,
    },
    {
      name: 'WAL per message, its delivery only: after the publish, until vacuumed (bytes)',
      value: report.courier1.walBytesPerDelivery,
      target: 0,
      atLeast: false,
    },
  ];
  if (at1000) {
    list.push({ name: 'latency p50 at 1,000/s (ms)', value: at1000.p50Ms, target: 5, atLeast: false });
    list.push({ name: 'latency p99 at 1,000/s (ms)', value: at1000.p99Ms, target: 25, atLeast: false });
  }
  return list;
}

const fmt = (n: number) => (Number.isFinite(n) ? Math.round(n).toLocaleString('en-US') : '—');
const fmt2 = (n: number) => (Number.isFinite(n) ? n.toFixed(2) : '—');

const largest = (values: (number | null)[]): number | null =>
  values.some((v) => v !== null) ? Math.max(...values.map((v) => v ?? 0)) : null;

/**
 * Peak RSS (VmHWM) of every Courier process the run started against PostgreSQL, by what it ran;
 * the largest is judged against the target. The embedded worker is not among them: it holds the
 * database too, whose memory is PostgreSQL's own in every other run.
 */
export function workerRss(r: BenchReport): [string, number | null][] {
  const rss: [string, number | null][] = [
    ['1 worker', r.courier1.peakRssMiB],
    ['3 workers (the largest)', r.courier3.peakRssMiB],
    [`1 worker, ${fmt(r.backlog)} scheduled for later`, r.courierBacklog.peakRssMiB],
    ['`courier serve` (API and worker in one), messages POSTed', r.api.peakRssMiB],
  ];
  const rounds = r.roundsPeakRssMiB;
  if (rounds.length > 0) {
    const of = `the largest of ${rounds.length}`;
    rss.push([`1 worker, head-to-head rounds (${of})`, largest(rounds.map((x) => x.courier))]);
    rss.push([
      `1 worker, backlog, head-to-head rounds (${of})`,
      largest(rounds.map((x) => x.courierBacklog)),
    ]);
  }
  for (const l of r.latency) rss.push([`1 worker, latency at ${fmt(l.offeredPerSec)}/s`, l.peakRssMiB]);
  return rss;
}

export function renderMarkdown(r: BenchReport): string {
  const rows: [string, string, string][] = [
    ['undici alone (ceiling, no database)', fmt(r.ceiling), ''],
    ['raw SQL pipeline (claim 100 SKIP LOCKED → POST → 1 UPDATE)', fmt(r.rawSql), ''],
    [
      '**Courier**, 1 worker process',
      fmt(r.courier1.deliveriesPerSec),
      `publish ${fmt(r.courier1.publishPerSec)}/s (engine)`,
    ],
    ['**Courier**, 3 worker processes', fmt(r.courier3.deliveriesPerSec), ''],
    [
      '**Courier** through its HTTP API (`courier serve`, 32 clients)',
      fmt(r.api.deliveriesPerSec),
      `publish ${fmt(r.api.publishPerSec)}/s (API, 202 answers), delivering meanwhile`,
    ],
    [
      `**Courier**, 1 worker, ${fmt(r.backlog)} scheduled for later`,
      fmt(r.courierBacklog.deliveriesPerSec),
      '',
    ],
    ['graphile-worker 0.17.3, defaults', fmt(r.graphileDefault), ''],
    [
      'graphile-worker 0.17.3, performance preset',
      fmt(r.graphilePerformance),
      'concurrency 24, pool 25, local queue 500, batched completion',
    ],
    [
      `pg-boss 10.4.2, ${r.pgBossSettings.pollers} pollers of ${r.pgBossSettings.batchSize}`,
      fmt(r.pgBoss),
      `work() called ${r.pgBossSettings.pollers} times, each fetching ${r.pgBossSettings.batchSize} at most every 0.5 s (v10's minimum)`,
    ],
    [
      '**Courier** on PGlite (embedded)',
      fmt(r.embedded.deliveriesPerSec),
      `publish ${fmt(r.embedded.publishPerSec)}/s (engine); worker peak RSS ${r.embedded.peakRssMiB ?? '—'} MiB, the database in it`,
    ],
  ];
  const lines = [
    `Run ${r.when} on ${r.machine}; ${fmt(r.messages)} messages of ${r.payloadBytes} bytes, one local receiver.` +
      (r.courierCompiled === false
        ? ' Courier ran its TypeScript sources through tsx (dist/ was older than src/, or absent, as the run began): its memory and CPU are not those of the compiled CLI.'
        : ''),
    '',
    '| System | deliveries/s | note |',
    '|---|---:|---|',
    ...rows.map(([a, b, c]) => `| ${a} | ${b} | ${c} |`),
    '',
    '| Offered load | achieved publish/s | p50 ms | p99 ms | samples | machine busy | CPU µs per message: worker / PostgreSQL / whole machine |',
    '|---:|---:|---:|---:|---:|---:|---:|',
    ...r.latency.map(
      (l) =>
        `| ${fmt(l.offeredPerSec)}/s | ${fmt(l.achievedPerSec)} | ${fmt2(l.p50Ms)} | ${fmt2(l.p99Ms)} | ${fmt(l.samples)} | ${l.cpu ? `${l.cpu.busyPct} % (steal ${steal(l.cpu)})` : '—'} | ${l.cpu ? `${l.cpu.systemUs} / ${l.cpu.postgresUs} / ${l.cpu.totalUs}` : '—'} |`,
    ),
    '',
    'Latency counts from before the publish call to the arrival at the receiver (both stamped on the machine’s monotonic clock), every message of a run; before it, untimed, the fresh worker warms up at the same rate (a fifth of the run’s length, at most 2 s) until those messages are delivered. The highest rate is half the median of the head-to-head rounds’ Courier drains. Every process of the run shares the machine: the bench publishing (counted in the whole machine), the worker, PostgreSQL and the receiver.',
    '',
    ...hostStallsLine(r.hostStalls),
    ...(r.rounds.length === 0
      ? []
      : [
          'Head to head, back to back in rotating order (the graphile-worker preset, pg-boss, raw SQL and backlog ratios below are the medians of these rounds; the backlog stays scheduled for later throughout):',
          '',
          `| Round | ${HEAD_TO_HEAD_NAMES.courier} | ${HEAD_TO_HEAD_NAMES.rawSql} | ${HEAD_TO_HEAD_NAMES.graphilePerformance} | ${HEAD_TO_HEAD_NAMES.pgBoss} | ${HEAD_TO_HEAD_NAMES.courierBacklog} | Courier ÷ raw SQL | Courier ÷ graphile-worker | Courier ÷ pg-boss | backlog ÷ empty |`,
          '|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
          ...r.rounds.map(
            (h, i) =>
              `| ${i + 1} | ${fmt(h.courier)} | ${fmt(h.rawSql)} | ${fmt(h.graphilePerformance)} | ${fmt(h.pgBoss)} | ${fmt(h.courierBacklog)} | ${fmt2(h.courier / h.rawSql)} | ${fmt2(h.courier / h.graphilePerformance)} | ${fmt2(h.courier / h.pgBoss)} | ${fmt2(h.courierBacklog / h.courier)} |`,
          ),
          '',
          ...cpuTable(r),
        ]),
    'Peak RSS (VmHWM) of every Courier worker process the run started against PostgreSQL, in MiB:',
    '',
    '| Process | peak RSS |',
    '|---|---:|',
    ...workerRss(r).map(([name, mib]) => `| ${name} | ${mib ?? '—'} |`),
    '',
    `WAL per message (1 worker): ${fmt(r.courier1.walBytesPerPublish)} bytes to publish it, its 1 KiB payload included; ` +
      `${fmt(r.courier1.walBytesPerDelivery)} bytes to deliver it, counted until the last completion is written and the delivered rows are vacuumed; ` +
      `${fmt(r.courier1.walBytesPerMessage)} bytes in all.`,
    '',
    '| Ratio | measured | target | met |',
    '|---|---:|---:|:---:|',
    ...ratios(r).map(
      (q) =>
        `| ${q.name} | ${fmt2(q.value)} | ${q.target ? `${q.atLeast ? '≥' : '≤'} ${q.target}` : '—'} | ${q.target ? ((q.atLeast ? q.value >= q.target : q.value <= q.target) ? 'yes' : '**no**') : ''} |`,
    ),
    '',
  ];
  return lines.join('\n');
}
