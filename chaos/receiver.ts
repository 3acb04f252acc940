/**
 * A receiver process of the chaos run: one loopback HTTP server per endpoint, each acting out its
 * script (catalog.ts). It runs apart from the runner so that the runner's work never delays its
 * answers or skews the arrival times it records. Config: CHAOS_RECEIVER (JSON). Prints one JSON line
 * with its ports; control server: GET /report (every request seen), POST /calm (time-based faults stop).
 */
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { type Action, type EndpointPlan, kindOf } from './catalog.ts';

export interface ReceiverConfig {
  endpoints: EndpointPlan[];
  /** Run epoch (ms): time-based scripts are phased against it, the same in every process. */
  epoch: number;
  /** Endpoints that go down listen on portBase + index, outside the ephemeral range, so reopening works. */
  portBase: number;
}

/** [endpoint index, webhook-id, arrival ms, answer (status, 'reset' or 'cut'), delay ms, not-before ms]. */
export type SeenRow = [number, string, number, number | 'reset' | 'cut', number, number];

export interface ReceiverReport {
  rows: SeenRow[];
  maxConcurrent: Record<number, number>;
  maxSameId: number;
  /** [endpoint index, webhook-id, ms] whenever one id was in flight twice at one endpoint. */
  overlaps: [number, string, number][];
  /** Intervals [from, to] during which an endpoint's server was closed. */
  downs: Record<number, [number, number][]>;
}

const config = JSON.parse(process.env.CHAOS_RECEIVER ?? '{}') as ReceiverConfig;
const rows: SeenRow[] = [];
const maxConcurrent: Record<number, number> = {};
const downs: Record<number, [number, number][]> = {};
let maxSameId = 0;
const overlaps: [number, string, number][] = [];
let calm = false;
const concurrent = new Map<number, number>();
const sameId = new Map<string, number>();
const attemptsById = new Map<string, number>();

function bump<K>(map: Map<K, number>, key: K, by: number): number {
  const value = (map.get(key) ?? 0) + by;
  if (value === 0) map.delete(key);
  else map.set(key, value);
  return value;
}

function retryAfterHeader(form: 'seconds' | 'date', now: number): { header: string; notBefore: number } {
  if (form === 'seconds') return { header: '2', notBefore: now + 2_000 };
  // An HTTP-date has whole seconds: 2 to 3 s ahead.
  const at = (Math.floor(now / 1000) + 3) * 1000;
  return { header: new Date(at).toUTCString(), notBefore: at };
}

function act(
  plan: EndpointPlan,
  row: SeenRow,
  req: http.IncomingMessage,
  res: http.ServerResponse,
  action: Action,
): void {
  if (action.kind === 'reset') {
    row[3] = 'reset';
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': '64' });
    res.write('{"ok":tr');
    setTimeout(() => req.socket.destroy(), 5);
    return;
  }
  row[3] = action.status;
  row[4] = action.delayMs ?? 0;
  const reply = () => {
    if (res.destroyed) return;
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (action.retryAfter) {
      const { header, notBefore } = retryAfterHeader(action.retryAfter, Date.now());
      headers['retry-after'] = header;
      row[5] = notBefore;
    }
    res.writeHead(action.status, headers);
    if (!action.endless) {
      res.end(`{"endpoint":"${plan.name}"}`);
      return;
    }
    // A body that never ends: the sender must stop reading on its own.
    const chunk = Buffer.alloc(16 * 1024, 'x');
    const timer = setInterval(() => res.write(chunk), 2);
    res.on('close', () => clearInterval(timer));
  };
  if (action.delayMs) setTimeout(reply, action.delayMs);
  else reply();
}

function handler(plan: EndpointPlan) {
  const kind = kindOf(plan.kind);
  return (req: http.IncomingMessage, res: http.ServerResponse) => {
    const at = Date.now();
    const webhookId = String(req.headers['webhook-id'] ?? '');
    const idKey = `${plan.index} ${webhookId}`;
    maxConcurrent[plan.index] = Math.max(maxConcurrent[plan.index] ?? 0, bump(concurrent, plan.index, 1));
    const same = bump(sameId, idKey, 1);
    maxSameId = Math.max(maxSameId, same);
    if (same > 1) overlaps.push([plan.index, webhookId, at]);
    let open = true;
    res.on('close', () => {
      if (!open) return;
      open = false;
      bump(concurrent, plan.index, -1);
      bump(sameId, idKey, -1);
    });
    const row: SeenRow = [plan.index, webhookId, at, 'cut', 0, 0];
    rows.push(row);
    const n = bump(attemptsById, idKey, 1);
    const action = kind.script(n, { elapsedMs: at - config.epoch, calm, phaseMs: plan.phaseMs });
    req.resume(); // the body is not needed; the id and arrival time are what we measure
    req.on('end', () => act(plan, row, req, res, action));
  };
}

interface Served {
  plan: EndpointPlan;
  server: http.Server;
  sockets: Set<Socket>;
  port: number;
}

async function listen(server: http.Server, port: number): Promise<number> {
  for (let tries = 0; ; tries++) {
    try {
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(port, '127.0.0.1', () => {
          server.off('error', reject);
          resolve();
        });
      });
      return (server.address() as AddressInfo).port;
    } catch (error) {
      if (tries > 100) throw error;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
}

async function serve(plan: EndpointPlan): Promise<Served> {
  const server = http.createServer(handler(plan));
  server.keepAliveTimeout = 60_000;
  const sockets = new Set<Socket>();
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => {});
  });
  const port = await listen(server, kindOf(plan.kind).down ? config.portBase + plan.index : 0);
  return { plan, server, sockets, port };
}

/** Closes the server (connections cut, new ones refused) during each down window, then reopens it. */
function cycleDown(s: Served): void {
  const down = kindOf(s.plan.kind).down!;
  const windows: [number, number][] = [];
  downs[s.plan.index] = windows;
  const tick = async () => {
    if (calm) return;
    const since = (Date.now() - config.epoch + s.plan.phaseMs) % down.periodMs;
    const wait = since < down.periodMs - down.downMs ? down.periodMs - down.downMs - since : 0;
    await new Promise((resolve) => setTimeout(resolve, wait));
    if (calm) return;
    const window: [number, number] = [Date.now(), Number.POSITIVE_INFINITY];
    windows.push(window);
    const closed = new Promise((resolve) => s.server.close(resolve));
    for (const socket of s.sockets) socket.destroy();
    await closed;
    await new Promise((resolve) => setTimeout(resolve, down.downMs));
    await listen(s.server, s.port);
    window[1] = Date.now();
    setTimeout(tick, 100);
  };
  void tick();
}

const served = await Promise.all(config.endpoints.map(serve));
for (const s of served) if (kindOf(s.plan.kind).down) cycleDown(s);

const control = http.createServer((req, res) => {
  if (req.url === '/calm') {
    calm = true;
    res.end();
    return;
  }
  if (req.url === '/report') {
    const report: ReceiverReport = { rows, maxConcurrent, maxSameId, overlaps, downs };
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify(report));
    return;
  }
  res.statusCode = 404;
  res.end();
});
const controlPort = await listen(control, 0);
process.stdout.write(
  `${JSON.stringify({ control: controlPort, ports: Object.fromEntries(served.map((s) => [s.plan.index, s.port])) })}\n`,
);
