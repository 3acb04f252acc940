import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ratios, workerRss } from '../../bench/report.ts';
import { runBench } from '../../bench/run.ts';

// A tiny run of `npm run bench` so the benchmark does not rot; its figures are not judged here.
describe('benchmark smoke run', () => {
  it('runs every system end to end and writes the report, table and chart', {
    timeout: 240_000,
  }, async () => {
    const outDir = mkdtempSync(join(tmpdir(), 'courier-bench-'));
    try {
      const report = await runBench({ smoke: true, outDir, log: () => {} });
      for (const value of [
        report.ceiling,
        report.rawSql,
        report.courier1.deliveriesPerSec,
        report.courier3.deliveriesPerSec,
        report.api.publishPerSec,
        report.api.deliveriesPerSec,
        report.courierBacklog.deliveriesPerSec,
        report.graphileDefault,
        report.graphilePerformance,
        report.pgBoss,
        report.embedded.deliveriesPerSec,
        report.embedded.publishPerSec,
        report.latency[0]!.p50Ms,
        report.latency[0]!.p99Ms,
        report.courier1.walBytesPerPublish,
        report.courier1.walBytesPerDelivery,
        report.courier1.walBytesPerMessage,
        ...Object.values(report.rounds[0]!),
        // Peak RSS comes from /proc.
        ...(process.platform === 'linux'
          ? [report.embedded.peakRssMiB, ...workerRss(report).map(([, mib]) => mib)]
          : []),
      ]) {
        // Infinity passes > 0: a rate over no time, or a ratio to nothing, must fail here too.
        expect(Number.isFinite(value)).toBe(true);
        expect(value).toBeGreaterThan(0);
      }
      for (const ratio of ratios(report)) expect(Number.isFinite(ratio.value), ratio.name).toBe(true);
      const markdown = readFileSync(join(outDir, 'latest.md'), 'utf8');
      expect(markdown).toContain('| Courier ÷ graphile-worker');
      expect(markdown).toContain('| Round | Courier, 1 worker |');
      expect(markdown).toContain('| Courier ÷ pg-boss |');
      expect(markdown).toContain('| WAL per message, its whole life');
      expect(markdown).toContain('| machine busy |');
      // The drains' CPU table needs two /proc samples inside a drain, which 300 deliveries may not give.
      if (markdown.includes('CPU per delivery during the drains'))
        expect(markdown).toContain('| machine busy | of it, taken by the host (steal) |');
      expect(report.hostStalls!.unitUs).toBeGreaterThan(0);
      expect(markdown).toContain('Host steadiness: a fixed computation timed for 0.5 s');
      expect(existsSync(join(outDir, 'chart.svg'))).toBe(true);
      expect(JSON.parse(readFileSync(join(outDir, 'latest.json'), 'utf8')).messages).toBe(300);
    } finally {
      rmSync(outDir, { recursive: true, force: true });
    }
  });
});
