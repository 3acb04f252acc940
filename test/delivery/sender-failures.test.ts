// Network failures, deadlines and oversized replies, against peers on 127.0.0.1 only.
// Timing assertions only bound from above, with margins for a loaded 2-core machine.
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.ts';
import { Sender, type SenderOptions } from '../../src/delivery/sender.ts';
import { type Resolver, SsrfGuard } from '../../src/delivery/ssrf-guard.ts';
import { firstDecision } from '../support/first-decision.ts';
import {
  closedPort,
  type Handle,
  startRawReceiver,
  startReceiver,
  startUnacceptingListener,
} from './receiver.ts';
import { SELF_SIGNED_CERT, SELF_SIGNED_KEY } from './tls-fixture.ts';

const body = Buffer.from('{}');
const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function sender(opts: Partial<SenderOptions> = {}): Sender {
  const s = new Sender({ guard: new SsrfGuard(['127.0.0.0/8']), clock: new ManualClock(), ...opts });
  // Never wait on a graceful close here: some attempts are left hanging on purpose.
  cleanups.push(() => void s.close());
  return s;
}

async function receiver(handle: Handle) {
  const r = await startReceiver(handle);
  cleanups.push(() => r.close());
  return r;
}

async function raw(onData: Parameters<typeof startRawReceiver>[0]) {
  const r = await startRawReceiver(onData);
  cleanups.push(() => r.close());
  return `http://127.0.0.1:${r.port}/`;
}

describe('connection failures', () => {
  it('reports a closed port as connection_refused that never went out', async () => {
    const port = await closedPort();
    const result = await sender().send({ url: `http://127.0.0.1:${port}/`, body, headers: {} });
    expect(result.outcome).toMatchObject({ kind: 'network', failure: 'connection_refused' });
    expect(result.requestWentOut).toBe(false);
  });

  it('reports a name that does not resolve as dns, never sent', async () => {
    const nxdomain: Resolver = (hostname, _options, callback) => {
      const err: NodeJS.ErrnoException = new Error(`getaddrinfo ENOTFOUND ${hostname}`);
      err.code = 'ENOTFOUND';
      queueMicrotask(() => callback(err, []));
    };
    const result = await sender({ lookup: nxdomain }).send({
      url: 'http://nowhere.test/',
      body,
      headers: {},
    });
    expect(result.outcome).toMatchObject({ kind: 'network', failure: 'dns' });
    expect(result.requestWentOut).toBe(false);
  });

  it('reports a handshake that never completes as connect_timeout, never sent', async (ctx) => {
    const listener = await startUnacceptingListener();
    if (!listener) return ctx.skip('this kernel accepts past a full backlog');
    cleanups.push(() => listener.close());
    const s = sender({ connectTimeoutMs: 300, requestTimeoutMs: 20_000 });
    const result = await s.send({ url: `http://127.0.0.1:${listener.port}/`, body, headers: {} });
    expect(result.outcome).toMatchObject({ kind: 'network', failure: 'connect_timeout' });
    expect(result.requestWentOut).toBe(false);
    expect(result.durationMs).toBeLessThan(10_000);
  });

  it('ends at the total deadline even while still connecting, and knows nothing went out', async (ctx) => {
    const listener = await startUnacceptingListener();
    if (!listener) return ctx.skip('this kernel accepts past a full backlog');
    cleanups.push(() => listener.close());
    const s = sender({ connectTimeoutMs: 20_000, requestTimeoutMs: 300 });
    const result = await s.send({ url: `http://127.0.0.1:${listener.port}/`, body, headers: {} });
    expect(result.outcome).toMatchObject({ kind: 'network', failure: 'timeout' });
    expect(result.requestWentOut).toBe(false);
    expect(result.durationMs).toBeGreaterThanOrEqual(300);
    expect(result.durationMs).toBeLessThan(10_000);
  });
});

describe('tls', () => {
  async function selfSigned() {
    let requests = 0;
    const server = https.createServer({ key: SELF_SIGNED_KEY, cert: SELF_SIGNED_CERT }, (_req, res) => {
      requests += 1;
      res.end();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    cleanups.push(() => new Promise<void>((resolve) => server.close(() => resolve())));
    return { port: (server.address() as AddressInfo).port, requests: () => requests };
  }

  it('reports an untrusted certificate as tls; the handshake did reach the receiver', async () => {
    const server = await selfSigned();
    const result = await sender().send({ url: `https://127.0.0.1:${server.port}/`, body, headers: {} });
    expect(result.outcome).toMatchObject({ kind: 'network', failure: 'tls' });
    expect(result.requestWentOut).toBe(true);
    expect(server.requests()).toBe(0);
  });

  it('checks names resolved for https connections too', async () => {
    const server = await selfSigned();
    const s = sender({ guard: new SsrfGuard() });
    const result = await s.send({ url: `https://localhost:${server.port}/`, body, headers: {} });
    expect(result.outcome).toMatchObject({ kind: 'refused' });
    expect(result.requestWentOut).toBe(false);
  });
});

describe('resets', () => {
  it('reports a connection destroyed once the request arrived as connection_reset', async () => {
    const r = await receiver((req) => req.socket.destroy());
    const result = await sender().send({ url: r.url, body, headers: {} });
    expect(result.outcome).toMatchObject({ kind: 'network', failure: 'connection_reset' });
    expect(result.requestWentOut).toBe(true);
    expect(r.requests).toHaveLength(1);
  });

  it('reports a reset in the middle of the status line and headers as connection_reset', async () => {
    const url = await raw((socket) => {
      socket.write('HTTP/1.1 200 OK\r\nContent-Ty');
      setTimeout(() => socket.destroy(), 20);
    });
    const result = await sender().send({ url, body, headers: {} });
    expect(result.outcome).toMatchObject({ kind: 'network', failure: 'connection_reset' });
    expect(result.requestWentOut).toBe(true);
  });

  it('reports a body cut short as connection_reset, keeping the status for the log', async () => {
    const url = await raw((socket) => {
      socket.write('HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\npartial');
      setTimeout(() => socket.destroy(), 20);
    });
    const result = await sender().send({ url, body, headers: {} });
    expect(result.outcome).toMatchObject({ kind: 'network', failure: 'connection_reset' });
    expect(result.responseStatus).toBe(200);
    expect(result.responseBody).toBe('partial');
  });

  it('keeps the Retry-After of a 429 whose body was cut short, and the policy waits it out', async () => {
    const url = await raw((socket) => {
      socket.write('HTTP/1.1 429 Too Many Requests\r\nRetry-After: 3600\r\nContent-Length: 100\r\n\r\nslow');
      setTimeout(() => socket.destroy(), 20);
    });
    const result = await sender().send({ url, body, headers: {} });
    expect(result.outcome).toMatchObject({
      kind: 'network',
      failure: 'connection_reset',
      answered: { status: 429, headers: { 'retry-after': '3600' } },
    });
    const decision = firstDecision(result.outcome);
    expect(decision).toMatchObject({ kind: 'retry', delayMs: 3_600_000, reason: 'retry_after' });
  });

  it('reports a malformed reply as other', async () => {
    const url = await raw((socket) => socket.end('SMTP ready\r\n\r\n'));
    const result = await sender().send({ url, body, headers: {} });
    expect(result.outcome).toMatchObject({ kind: 'network', failure: 'other' });
  });
});

describe('the total deadline', () => {
  it('cuts a receiver that answers too late', async () => {
    const r = await receiver((_req, res) => {
      const late = setTimeout(() => res.writeHead(200).end(), 5_000);
      res.on('close', () => clearTimeout(late));
    });
    const result = await sender({ requestTimeoutMs: 300 }).send({ url: r.url, body, headers: {} });
    expect(result.outcome).toMatchObject({ kind: 'network', failure: 'timeout' });
    expect(result.requestWentOut).toBe(true);
    expect(result.durationMs).toBeGreaterThanOrEqual(300);
    expect(result.durationMs).toBeLessThan(4_000);
  });

  it('closes the connection of an attempt it gave up on', async () => {
    let closedAt = 0;
    const r = await receiver((_req, res) => {
      const late = setTimeout(() => res.writeHead(200).end(), 60_000);
      res.on('close', () => {
        clearTimeout(late);
        closedAt = performance.now();
      });
    });
    const result = await sender({ requestTimeoutMs: 300 }).send({ url: r.url, body, headers: {} });
    const settledAt = performance.now();
    expect(result.outcome).toMatchObject({ kind: 'network', failure: 'timeout' });
    await expect.poll(() => closedAt, { timeout: 2_000 }).toBeGreaterThan(0);
    expect(closedAt - settledAt).toBeLessThan(1_000);
  });

  it('cuts a receiver that trickles its body at the total deadline', async () => {
    const r = await receiver((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      const drip = setInterval(() => res.write('.'), 50);
      res.on('close', () => clearInterval(drip));
    });
    const result = await sender({ requestTimeoutMs: 400 }).send({ url: r.url, body, headers: {} });
    expect(result.outcome).toMatchObject({ kind: 'network', failure: 'timeout' });
    expect(result.responseStatus).toBe(200);
    expect(result.durationMs).toBeGreaterThanOrEqual(400);
    expect(result.durationMs).toBeLessThan(4_000);
  });
});

describe('oversized replies', () => {
  it('caps an endless body, finishes promptly and drops the connection', async () => {
    let written = 0;
    let closed = false;
    const r = await receiver((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      const chunk = Buffer.alloc(64 * 1024, 'a');
      const pump = () => {
        while (!res.destroyed && res.write(chunk)) written += chunk.length;
      };
      res.on('drain', pump);
      res.on('close', () => {
        closed = true;
      });
      pump();
    });
    const result = await sender({ maxResponseBytes: 1000, requestTimeoutMs: 20_000 }).send({
      url: r.url,
      body,
      headers: {},
    });
    expect(result.outcome).toMatchObject({ kind: 'response', status: 200 });
    expect(result.responseBody).toBe('a'.repeat(1000));
    expect(result.durationMs).toBeLessThan(5_000);
    await expect.poll(() => closed, { timeout: 5_000 }).toBe(true);
    // Socket buffers only: nothing like the gigabytes an endless body would pile up if we kept reading.
    expect(written).toBeLessThan(64 * 1024 * 1024);
  });

  it('keeps a response body within the cap and the socket for reuse', async () => {
    const r = await receiver((_req, res) => res.writeHead(500).end('x'.repeat(4096)));
    const s = sender();
    for (let i = 0; i < 5; i++) {
      const result = await s.send({ url: r.url, body, headers: {} });
      expect(result.responseBody).toHaveLength(4096);
    }
    expect(r.sockets.length).toBeLessThanOrEqual(2);
  });

  it('keeps headers bounded but small ones intact', async () => {
    const r = await receiver((_req, res) =>
      res.writeHead(503, { 'x-junk': 'j'.repeat(8000), 'retry-after': '7' }).end(),
    );
    const result = await sender().send({ url: r.url, body, headers: {} });
    expect(result.outcome).toMatchObject({ kind: 'response', status: 503, headers: { 'retry-after': '7' } });
    expect(result.responseHeaders?.['x-junk']).toBeUndefined();
  });
});
