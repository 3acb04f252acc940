/**
 * The benchmark's webhook receiver, in its own process: answers 200 at once, counts requests,
 * records first/last arrival and, when the body carries `t` (the publish instant), latency.
 * Control: GET /_stats, POST /_reset. Prints its port on stdout.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

// CLOCK_MONOTONIC in milliseconds, as preciseNow in lib.ts (not imported: it would load pg here).
const now = () => Number(process.hrtime.bigint()) / 1e6;
let count = 0;
let first = 0;
let last = 0;
let latencies: number[] = [];

const server = http.createServer((req, res) => {
  if (req.url === '/_stats') {
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ count, first, last, latencies }));
    return;
  }
  if (req.url === '/_reset') {
    count = 0;
    first = 0;
    last = 0;
    latencies = [];
    res.end();
    return;
  }
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    const at = now();
    count++;
    if (!first) first = at;
    last = at;
    const body = Buffer.concat(chunks);
    // The publish instant sits at the start of the payload: {"t":1796…,"pad":"…"}.
    if (body[2] === 0x74 && body[3] === 0x22) {
      const t = Number(body.subarray(5, body.indexOf(0x2c)).toString());
      if (t > 0) latencies.push(at - t);
    }
    res.end();
  });
});
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => {
  process.stdout.write(`${(server.address() as AddressInfo).port}\n`);
});
