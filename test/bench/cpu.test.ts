import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { startCpuSampler } from '../../bench/cpu.ts';
import { preciseNow } from '../../bench/lib.ts';

describe('CPU per delivery from /proc', () => {
  it('charges a busy process to the system under test, and the whole machine at least as much', async () => {
    const sampler = startCpuSampler(/cpu-test-marker/);
    const first = preciseNow();
    // 600 ms of a busy loop in a process whose command line carries the marker.
    const child = spawn(process.execPath, [
      '-e',
      'const end = Date.now() + 600; while (Date.now() < end); // cpu-test-marker',
    ]);
    await new Promise((resolve) => setTimeout(resolve, 500));
    const last = preciseNow();
    await new Promise((resolve) => child.on('exit', resolve));
    // Pretend 1,001 deliveries arrived between first and last: about 500 µs of one CPU each.
    const cpu = sampler.stop(first, last, 1001);
    expect(cpu).not.toBeNull();
    // At least a tenth of a CPU even on a crowded machine, and never more than one CPU.
    expect(cpu!.systemUs).toBeGreaterThan(50);
    expect(cpu!.systemUs).toBeLessThan(800);
    expect(cpu!.totalUs).toBeGreaterThanOrEqual(cpu!.systemUs);
    expect(cpu!.busyPct).toBeGreaterThan(0);
    expect(cpu!.busyPct).toBeLessThanOrEqual(100);
    expect(cpu!.stealPct).toBeGreaterThanOrEqual(0);
    expect(cpu!.stealPct).toBeLessThanOrEqual(cpu!.busyPct);
  });

  it('gives nothing for a drain too short to sample', () => {
    const sampler = startCpuSampler(/nothing-matches-this/);
    const now = preciseNow();
    expect(sampler.stop(now, now + 1, 2)).toBeNull();
  });
});
