/** A dependency-free SVG chart of one run: throughput per system, and Courier's latency. */
import type { BenchReport } from './report.ts';

const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;');

export function renderChart(r: BenchReport): string {
  const bars: [string, number, string][] = [
    ['undici alone (ceiling)', r.ceiling, '#9aa5b1'],
    ['raw SQL pipeline', r.rawSql, '#9aa5b1'],
    ['Courier, 1 worker', r.courier1.deliveriesPerSec, '#2f6fdb'],
    ['Courier, 3 workers', r.courier3.deliveriesPerSec, '#2f6fdb'],
    ['Courier via its HTTP API', r.api.deliveriesPerSec, '#2f6fdb'],
    ['Courier, 1M scheduled later', r.courierBacklog.deliveriesPerSec, '#2f6fdb'],
    ['Courier on PGlite', r.embedded.deliveriesPerSec, '#2f6fdb'],
    ['graphile-worker, performance', r.graphilePerformance, '#e0823d'],
    ['graphile-worker, defaults', r.graphileDefault, '#e0823d'],
    [`pg-boss, ${r.pgBossSettings.pollers} pollers of ${r.pgBossSettings.batchSize}`, r.pgBoss, '#e0823d'],
  ];
  const width = 760;
  const left = 230;
  const barH = 22;
  const max = Math.max(...bars.map((b) => b[1]));
  const rows = bars.map(([label, value, color], i) => {
    const y = 40 + i * (barH + 8);
    const w = Math.max(1, ((width - left - 90) * value) / max);
    return `<text x="${left - 8}" y="${y + 16}" text-anchor="end">${esc(label)}</text>
<rect x="${left}" y="${y}" width="${w.toFixed(1)}" height="${barH}" fill="${color}"/>
<text x="${left + w + 6}" y="${y + 16}">${Math.round(value).toLocaleString('en-US')}/s</text>`;
  });
  const latTop = 40 + bars.length * (barH + 8) + 40;
  const lat = r.latency.map(
    (l, i) =>
      `<text x="${left - 8}" y="${latTop + 24 + i * 22}" text-anchor="end">offered ${l.offeredPerSec.toLocaleString('en-US')}/s (achieved ${Math.round(l.achievedPerSec).toLocaleString('en-US')}/s)</text>
<text x="${left}" y="${latTop + 24 + i * 22}">p50 ${l.p50Ms.toFixed(2)} ms · p99 ${l.p99Ms.toFixed(2)} ms</text>`,
  );
  const height = latTop + 40 + r.latency.length * 22;
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" font-family="sans-serif" font-size="13">
<rect width="100%" height="100%" fill="white"/>
<text x="16" y="24" font-size="15" font-weight="bold">Deliveries per second (${r.messages.toLocaleString('en-US')} × 1 KiB, one run)</text>
${rows.join('\n')}
<text x="16" y="${latTop}" font-size="15" font-weight="bold">Courier publish-to-receiver latency</text>
${lat.join('\n')}
</svg>
`;
}
