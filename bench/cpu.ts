/**
 * CPU per delivery by process during a drain, read from /proc (Linux): what a missed throughput
 * target is made of. Processes are told apart by their command line: the receiver, the system
 * under test (its pattern), and every PostgreSQL process. null where /proc cannot be read.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { preciseNow } from './lib.ts';

export interface CpuPerDelivery {
  receiverUs: number;
  systemUs: number;
  postgresUs: number;
  /** Every process on the machine, these three included. */
  totalUs: number;
  /** Share of the machine's CPU time that was not idle. */
  busyPct: number;
  /**
   * Share of the machine's CPU time the hypervisor gave to someone else while this machine had
   * work (steal; counted in busyPct): a host under contention, not work done here.
   */
  stealPct: number;
}

type Group = 'receiver' | 'system' | 'postgres';

interface Sample {
  at: number;
  busyTicks: number;
  stealTicks: number;
  allTicks: number;
  /** pid → [group, utime + stime in ticks] */
  processes: Map<string, [Group, number]>;
}

const TICKS_PER_SECOND = 100;
const SAMPLE_EVERY_MS = 100;

function groupOf(pid: string, system: RegExp): Group | null {
  try {
    const cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
    // Backends rename themselves "postgres: …"; the server and a fresh fork show its path.
    if (cmdline.startsWith('postgres') || cmdline.includes('/bin/postgres')) return 'postgres';
    if (cmdline.includes('bench/receiver.ts')) return 'receiver';
    return system.test(cmdline) ? 'system' : null;
  } catch {
    return null; // exited meanwhile
  }
}

/** Classified once per pid, so a sample reads only the few processes measured. */
function sample(system: RegExp, groups: Map<string, Group | null>): Sample {
  const ticks = readFileSync('/proc/stat', 'utf8')
    .split('\n', 1)[0]!
    .trim()
    .split(/\s+/)
    .slice(1)
    .map(Number);
  const allTicks = ticks.reduce((a, b) => a + b, 0);
  const processes = new Map<string, [Group, number]>();
  for (const pid of readdirSync('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    let group = groups.get(pid);
    if (group === undefined) {
      group = groupOf(pid, system);
      groups.set(pid, group);
    }
    if (!group) continue;
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      processes.set(pid, [group, Number(fields[11]) + Number(fields[12])]);
    } catch {
      // exited meanwhile
    }
  }
  // idle and iowait are the 4th and 5th fields, steal the 8th
  return {
    // The receiver's clock, so a sample falls inside or outside its first and last arrival.
    at: preciseNow(),
    busyTicks: allTicks - ticks[3]! - ticks[4]!,
    stealTicks: ticks[7] ?? 0,
    allTicks,
    processes,
  };
}

/**
 * Samples until stop(first, last, count), which returns the CPU per delivery between the first and
 * the last arrival at the receiver (`count` of them; instants in preciseNow's milliseconds). A
 * process that exits inside that window is missed: the systems measured keep theirs running.
 */
export function startCpuSampler(system: RegExp): {
  stop(first: number, last: number, count: number): CpuPerDelivery | null;
} {
  const samples: Sample[] = [];
  const groups = new Map<string, Group | null>();
  let readable = true;
  const take = () => {
    try {
      samples.push(sample(system, groups));
    } catch {
      readable = false;
    }
  };
  take();
  const timer = setInterval(take, SAMPLE_EVERY_MS);
  return {
    stop(first, last, count) {
      clearInterval(timer);
      const inside = samples.filter((s) => s.at >= first && s.at <= last);
      if (!readable || inside.length < 2 || count < 2) return null;
      const a = inside[0]!;
      const b = inside.at(-1)!;
      const deliveries = ((count - 1) * (b.at - a.at)) / (last - first);
      const us = (ticks: number) => Math.round(((ticks / TICKS_PER_SECOND) * 1e6) / deliveries);
      const used: Record<Group, number> = { receiver: 0, system: 0, postgres: 0 };
      // A process first seen after the window opened spent all its time inside it.
      for (const [pid, [group, ticks]] of b.processes)
        used[group] += ticks - (a.processes.get(pid)?.[1] ?? 0);
      return {
        receiverUs: us(used.receiver),
        systemUs: us(used.system),
        postgresUs: us(used.postgres),
        // /proc/stat counts every CPU; per delivery it is the whole machine's work.
        totalUs: us(b.busyTicks - a.busyTicks),
        busyPct: Math.round((100 * (b.busyTicks - a.busyTicks)) / (b.allTicks - a.allTicks)),
        stealPct: Math.round((100 * (b.stealTicks - a.stealTicks)) / (b.allTicks - a.allTicks)),
      };
    },
  };
}
