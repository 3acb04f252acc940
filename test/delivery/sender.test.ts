// Real HTTP against receivers on 127.0.0.1 only.
import { randomBytes } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.ts';
import { loadConfig } from '../../src/config.ts';
import { DEFAULT_USER_AGENT, Sender, type SenderOptions } from '../../src/delivery/sender.ts';
import { type Resolver, SsrfGuard } from '../../src/delivery/ssrf-guard.ts';
import { createSender } from '../../src/runtime.ts';
import { firstDecision } from '../support/first-decision.ts';
import { type Handle, type Receiver, startReceiver } from './receiver.ts';

const LOOPBACK = ['127.0.0.0/8', '::1/128'];
const body = Buffer.from('{"type":"invoice.paid"}');

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function receiver(handle: Handle): Promise<Receiver> {
  const r = await startReceiver(handle);
  cleanups.push(() => r.close());
  return r;
}

function sender(opts: Partial<SenderOptions> & { allow?: string[] } = {}): Sender {
  const s = new Sender({ guard: new SsrfGuard(opts.allow ?? LOOPBACK), clock: new ManualClock(), ...opts });
  cleanups.push(() => s.close());
  return s;
}

const reply =
  (status: number, headers: Record<string, string> = {}, text = ''): Handle =>
  (_req, res) =>
    res.writeHead(status, headers).end(text);

describe('Sender with the allow-list off', () => {
  it('refuses a loopback literal without opening a connection', async () => {
    const r = await receiver(reply(200));
    const result = await sender({ allow: [] }).send({ url: `${r.url}/hook`, body, headers: {} });
    expect(result.outcome).toEqual({
      kind: 'refused',
      reason: 'refused: 127.0.0.1 is a loopback address; allow it with COURIER_ALLOW_PRIVATE_NETWORKS',
    });
    expect(result.requestWentOut).toBe(false);
    expect(r.requests).toHaveLength(0);
    expect(r.sockets).toHaveLength(0);
  });

  it("takes the configuration's guard, NAT64 prefixes included (createSender)", async () => {
    // Named, the prefix reads 127.0.0.1 out of the address; unnamed, it is refused as unique-local.
    const s = createSender(loadConfig({ COURIER_NAT64_PREFIXES: 'fd00:64::/96' }), new ManualClock());
    cleanups.push(() => s.close());
    const result = await s.send({ url: 'http://[fd00:64::7f00:1]:9/hook', body, headers: {} });
    expect(result.outcome).toEqual({
      kind: 'refused',
      reason:
        'refused: fd00:64::7f00:1 is the NAT64 form (in fd00:64::/96) of 127.0.0.1, which is a loopback address; allow it with COURIER_ALLOW_PRIVATE_NETWORKS',
    });
    expect(result.requestWentOut).toBe(false);
  });

  it('refuses a hostname that resolves to loopback, at connect time, before any connection', async () => {
    const r = await receiver(reply(200));
    const result = await sender({ allow: [] }).send({
      url: `http://localhost:${r.port}/`,
      body,
      headers: {},
    });
    expect(result.outcome.kind).toBe('refused');
    if (result.outcome.kind === 'refused')
      expect(result.outcome.reason).toMatch(
        /^refused: localhost resolves to an address which is a loopback address;/,
      );
    expect(result.requestWentOut).toBe(false);
    expect(r.sockets).toHaveLength(0);
  });

  it('refuses odd spellings, other schemes, credentials and garbage without throwing', async () => {
    const s = sender({ allow: [] });
    for (const url of [
      'http://0x7f.1/',
      'http://2130706433/',
      'ftp://example.com/',
      'http://a:b@example.com/',
      'nope',
    ]) {
      const result = await s.send({ url, body, headers: {} });
      expect(result.outcome.kind, url).toBe('refused');
      expect(result.requestWentOut).toBe(false);
    }
  });
});

describe('Sender with loopback allowed', () => {
  it('delivers, and captures status and body (headers only of a response that is not a 2xx)', async () => {
    const r = await receiver(reply(200, { 'content-type': 'text/plain', 'x-trace': 'abc' }, 'thanks'));
    const clock = new ManualClock(Date.UTC(2026, 1, 2));
    const result = await sender({ clock }).send({ url: `${r.url}/hooks/in?x=1#frag`, body, headers: {} });
    expect(result.outcome).toMatchObject({ kind: 'response', status: 200 });
    expect(result.responseStatus).toBe(200);
    expect(result.responseHeaders).toBeUndefined();
    expect(result.responseBody).toBe('thanks');
    expect(result.requestWentOut).toBe(true);
    expect(result.startedAt).toBe(Date.UTC(2026, 1, 2));
    expect(result.durationMs).toBeGreaterThan(0);
    expect(r.requests.map((q) => [q.method, q.url])).toEqual([['POST', '/hooks/in?x=1']]);
  });

  it.each([500, 410, 404, 400, 301])('returns %i as a response outcome, with its headers', async (status) => {
    const r = await receiver(reply(status, { 'content-type': 'text/plain', 'x-trace': 'abc' }, 'nope'));
    const result = await sender().send({ url: r.url, body, headers: {} });
    expect(result.outcome).toMatchObject({ kind: 'response', status });
    expect(result.responseBody).toBe('nope');
    expect(result.responseHeaders).toMatchObject({ 'content-type': 'text/plain', 'x-trace': 'abc' });
  });

  it('hands Retry-After of a 429 to the policy', async () => {
    const r = await receiver(reply(429, { 'Retry-After': '120' }));
    const result = await sender().send({ url: r.url, body, headers: {} });
    expect(result.outcome).toMatchObject({
      kind: 'response',
      status: 429,
      headers: { 'retry-after': '120' },
    });
    expect(result.responseHeaders?.['retry-after']).toBe('120');
  });

  it('hands the policy a Retry-After the log had no room for, and every value of a repeated one', async () => {
    const padding = Array.from({ length: 8 }, (_, i): [string, string] => [`x-pad-${i}`, 'p'.repeat(500)]);
    const r = await receiver((_req, res) =>
      res.writeHead(429, [...padding, ['retry-after', '3600'], ['retry-after', '3600']].flat()).end(),
    );
    const result = await sender().send({ url: r.url, body, headers: {} });
    expect(result.responseHeaders?.['retry-after']).toBeUndefined(); // past the log's 4 KiB
    expect(result.outcome).toMatchObject({ headers: { 'retry-after': ['3600', '3600'] } });
    const decision = firstDecision(result.outcome);
    expect(decision).toMatchObject({ kind: 'retry', delayMs: 3_600_000, reason: 'retry_after' });
  });

  it('never follows a redirect', async () => {
    const r = await receiver((req, res) =>
      req.url === '/moved' ? res.writeHead(302, { location: '/elsewhere' }).end() : res.writeHead(200).end(),
    );
    const result = await sender().send({ url: `${r.url}/moved`, body, headers: {} });
    expect(result.outcome).toMatchObject({
      kind: 'response',
      status: 302,
      headers: { location: '/elsewhere' },
    });
    expect(r.requests).toHaveLength(1);
  });

  it('sends the body bytes and headers exactly, adding user-agent and content-type', async () => {
    const r = await receiver(reply(204));
    const binary = randomBytes(70_000); // not valid UTF-8, larger than one socket write
    await sender().send({
      url: r.url,
      body: binary,
      headers: { 'webhook-id': 'msg_1', 'webhook-signature': 'v1,c2lnbmF0dXJl', 'x-custom': 'a, b' },
    });
    const [got] = r.requests;
    expect(got?.body.equals(binary)).toBe(true);
    expect(got?.headers).toMatchObject({
      'webhook-id': 'msg_1',
      'webhook-signature': 'v1,c2lnbmF0dXJl',
      'x-custom': 'a, b',
      'user-agent': DEFAULT_USER_AGENT,
      'content-type': 'application/json',
      'content-length': '70000',
    });
  });

  it("keeps the caller's user-agent and content-type, whatever their case", async () => {
    const r = await receiver(reply(204));
    await sender({ userAgent: 'unused' }).send({
      url: r.url,
      body,
      headers: { 'User-Agent': 'Mine/1', 'Content-Type': 'application/cloudevents+json' },
    });
    expect(r.requests[0]?.headers['user-agent']).toBe('Mine/1');
    expect(r.requests[0]?.headers['content-type']).toBe('application/cloudevents+json');
    expect(r.requests[0]?.headers['user-agent']?.split(',')).toHaveLength(1);
  });

  it('reuses keep-alive connections', async () => {
    const r = await receiver(reply(200, {}, 'ok'));
    const s = sender({ connections: 4 });
    for (let i = 0; i < 30; i++) await s.send({ url: r.url, body, headers: {} });
    // undici waits one event-loop turn before reusing a socket, so back-to-back sends may use two.
    expect(r.sockets.length).toBeLessThanOrEqual(2);
    const results = await Promise.all(
      Array.from({ length: 60 }, () => s.send({ url: r.url, body, headers: {} })),
    );
    expect(results.every((x) => x.outcome.kind === 'response')).toBe(true);
    expect(r.requests).toHaveLength(90);
    expect(r.sockets.length).toBeLessThanOrEqual(4);
  });

  it('delivers to an allowed IPv6 literal', async (ctx) => {
    const r = await startReceiver(reply(200, {}, 'v6'), '::1').catch(() => undefined);
    if (!r) return ctx.skip('no IPv6 loopback here');
    cleanups.push(() => r.close());
    const result = await sender().send({ url: `http://[::1]:${r.port}/`, body, headers: {} });
    expect(result.responseBody).toBe('v6');
    const refused = await sender({ allow: ['127.0.0.0/8'] }).send({
      url: `http://[::1]:${r.port}/`,
      body,
      headers: {},
    });
    expect(refused.outcome.kind).toBe('refused');
    expect(r.requests).toHaveLength(1);
  });

  it('resolves localhost through the guard and delivers', async () => {
    const r = await receiver(reply(200, {}, 'hi'));
    const result = await sender().send({ url: `http://localhost:${r.port}/`, body, headers: {} });
    expect(result.outcome).toMatchObject({ kind: 'response', status: 200 });
    expect(r.requests).toHaveLength(1);
  });

  it('connects to the address it checked even if the name now resolves elsewhere (rebinding)', async (ctx) => {
    // The same port on two loopback addresses; only 127.0.0.1 is allowed.
    const allowed = await receiver(reply(200, {}, 'checked'));
    const inside = await startReceiver(reply(200, {}, 'rebound'), '127.0.0.2', allowed.port).catch(
      () => undefined,
    );
    // Without a receiver on 127.0.0.2, a connection to it could not be seen: skip, not pass.
    if (!inside) return ctx.skip('127.0.0.2 cannot be bound here');
    cleanups.push(() => inside.close());
    let calls = 0;
    const rebinding: Resolver = (_host, _options, callback) => {
      calls += 1;
      const address = calls === 1 ? '127.0.0.1' : '127.0.0.2';
      queueMicrotask(() => callback(null, [{ address, family: 4 }]));
    };
    const s = sender({ allow: ['127.0.0.1/32'], lookup: rebinding });
    const first = await s.send({ url: `http://rebind.test:${allowed.port}/`, body, headers: {} });
    expect(first.responseBody).toBe('checked');
    expect(calls).toBe(1);
    expect(inside.requests).toHaveLength(0);
  });

  it('refuses a name when one of its addresses is outside the allow-list', async () => {
    const r = await receiver(reply(200));
    // Loopback only, so even a broken guard could not send traffic off this machine.
    const both: Resolver = (_host, _options, callback) =>
      queueMicrotask(() =>
        callback(null, [
          { address: '127.0.0.1', family: 4 },
          { address: '127.0.0.2', family: 4 },
        ]),
      );
    const s = sender({ allow: ['127.0.0.1/32'], lookup: both });
    const result = await s.send({ url: `http://mixed.test:${r.port}/`, body, headers: {} });
    expect(result.outcome).toMatchObject({ kind: 'refused' });
    expect(result.requestWentOut).toBe(false);
    expect(r.sockets).toHaveLength(0);
  });

  it('shares one lookup among the connections opening at once to a name', async () => {
    const r = await receiver(reply(200));
    let calls = 0;
    const slow: Resolver = (_host, _options, callback) => {
      calls += 1;
      setTimeout(() => callback(null, [{ address: '127.0.0.1', family: 4 }]), 30);
    };
    const s = sender({ lookup: slow });
    const url = `http://shared.test:${r.port}/`;
    const results = await Promise.all(Array.from({ length: 5 }, () => s.send({ url, body, headers: {} })));
    expect(results.map((x) => x.responseStatus)).toEqual([200, 200, 200, 200, 200]);
    expect(r.sockets.length).toBeGreaterThan(1); // several connections, each of which looked the name up
    expect(calls).toBe(1);
  });

  it("throws when this machine is out of a resource (file descriptors): not the receiver's failure", async () => {
    const emfile: Resolver = (_host, _options, callback) => {
      const error: NodeJS.ErrnoException = new Error('getaddrinfo EMFILE out.test');
      error.code = 'EMFILE';
      queueMicrotask(() => callback(error, []));
    };
    const s = sender({ lookup: emfile });
    await expect(s.send({ url: 'http://out.test:9/', body, headers: {} })).rejects.toMatchObject({
      code: 'EMFILE',
    });
  });

  it('drops connection headers, which undici refuses and which describe its own connection', async () => {
    const r = await receiver(reply(200));
    const s = sender();
    const connection = {
      'Keep-Alive': 'timeout=5',
      upgrade: 'h2c',
      Expect: '100-continue',
      te: 'trailers',
      'transfer-encoding': 'chunked',
      'proxy-connection': 'keep-alive',
      connection: 'upgrade',
    };
    for (let i = 0; i < 3; i++) {
      const result = await s.send({ url: r.url, body, headers: { ...connection, 'x-kept': 'yes' } });
      expect(result.responseStatus).toBe(200);
    }
    expect(r.requests).toHaveLength(3);
    const got = r.requests[0]!.headers;
    expect(got['x-kept']).toBe('yes');
    for (const name of ['keep-alive', 'upgrade', 'expect', 'te', 'transfer-encoding', 'proxy-connection']) {
      expect(got[name], name).toBeUndefined();
    }
  });

  it('throws for misuse: headers undici cannot send, or use after close', async () => {
    const r = await receiver(reply(200));
    const s = sender();
    await expect(s.send({ url: r.url, body, headers: { 'x-bad': 'a\nb' } })).rejects.toThrow(/x-bad/);
    await s.close();
    await expect(s.send({ url: r.url, body, headers: {} })).rejects.toMatchObject({
      code: expect.stringMatching(/^UND_ERR_(CLOSED|DESTROYED)$/),
    });
  });
});

describe("Sender's public-only requests (a URL an application's owner set)", () => {
  const PUBLIC_ONLY =
    /this endpoint is public-only \(publicOnly: .*\), so COURIER_ALLOW_PRIVATE_NETWORKS does not apply to it$/;

  it('refuses an allow-listed literal without a connection, while the same URL goes out for the operator', async () => {
    const r = await receiver(reply(200));
    const s = sender();
    const url = `${r.url}/hook`;
    expect((await s.send({ url, body, headers: {} })).outcome).toMatchObject({
      kind: 'response',
      status: 200,
    });
    const refused = await s.send({ url, publicOnly: true, body, headers: {} });
    expect(refused.outcome).toMatchObject({ kind: 'refused', reason: expect.stringMatching(PUBLIC_ONLY) });
    expect(refused.requestWentOut).toBe(false);
    expect(r.requests).toHaveLength(1);
  });

  it('checks a host name on its own connections: an open keep-alive one of the operator is not reused', async () => {
    const r = await receiver(reply(200));
    const resolver: Resolver = (_host, _options, callback) =>
      queueMicrotask(() => callback(null, [{ address: '127.0.0.1', family: 4 }]));
    const s = sender({ lookup: resolver });
    const url = `http://hooks.test:${r.port}/hook`;
    // Refused first: the refusal is the public-only lane's alone.
    const first = await s.send({ url, publicOnly: true, body, headers: {} });
    expect(first.outcome).toEqual({
      kind: 'refused',
      reason: expect.stringMatching(
        /^refused: hooks\.test resolves to an address which is a loopback address; .*/,
      ),
    });
    expect((first.outcome as { reason: string }).reason).toMatch(PUBLIC_ONLY);
    expect((await s.send({ url, body, headers: {} })).outcome).toMatchObject({
      kind: 'response',
      status: 200,
    });
    expect(r.sockets).toHaveLength(1);
    const again = await s.send({ url, publicOnly: true, body, headers: {} });
    expect(again.outcome).toMatchObject({ kind: 'refused' });
    expect(again.requestWentOut).toBe(false);
    expect(r.requests).toHaveLength(1);
    expect(r.sockets).toHaveLength(1);
  });

  it('closes, and refuses to send after closing, with the public-only lane made or not', async () => {
    const closed = { code: expect.stringMatching(/^UND_ERR_(CLOSED|DESTROYED)$/) };
    const made = new Sender({ guard: new SsrfGuard(LOOPBACK), clock: new ManualClock() });
    await made.send({ url: 'http://127.0.0.1:9/hook', publicOnly: true, body, headers: {} });
    await made.close();
    await expect(
      made.send({ url: 'http://hooks.test:9/', publicOnly: true, body, headers: {} }),
    ).rejects.toMatchObject(closed);
    const never = new Sender({ guard: new SsrfGuard(LOOPBACK), clock: new ManualClock() });
    await never.close();
    await expect(
      never.send({ url: 'http://127.0.0.1:9/', publicOnly: true, body, headers: {} }),
    ).rejects.toMatchObject(closed);
  });
});
