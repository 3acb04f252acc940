// Strings only: nothing here opens a connection.
import type dns from 'node:dns';
import { describe, expect, it } from 'vitest';
import {
  type CheckResult,
  classifyAddress,
  guardedLookup,
  type Resolver,
  SsrfGuard,
} from '../../src/delivery/ssrf-guard.ts';

function reason(result: CheckResult): string {
  return result.ok ? 'allowed' : result.reason;
}

/** The prefix a NAT64 form is in, as classifyAddress reports it. */
function wellKnown(form: string) {
  return form === 'NAT64' ? { nat64Prefix: '64:ff9b::/96' } : {};
}

describe('classifyAddress', () => {
  it.each([
    ['127.0.0.1', 'loopback'],
    ['127.255.255.254', 'loopback'],
    ['::1', 'loopback'],
    ['10.0.0.5', 'private'],
    ['172.16.0.1', 'private'],
    ['172.31.255.255', 'private'],
    ['192.168.1.1', 'private'],
    ['169.254.169.254', 'linkLocal'],
    ['169.254.0.1', 'linkLocal'],
    ['fe80::1', 'linkLocal'],
    ['fe80::1%eth0', 'linkLocal'],
    ['100.64.0.1', 'carrierGradeNat'],
    ['100.127.255.255', 'carrierGradeNat'],
    ['fc00::1', 'uniqueLocal'],
    ['fd12:3456::1', 'uniqueLocal'],
    ['224.0.0.1', 'multicast'],
    ['239.255.255.250', 'multicast'],
    ['ff02::1', 'multicast'],
    ['0.0.0.0', 'unspecified'],
    ['0.1.2.3', 'unspecified'],
    ['::', 'unspecified'],
    ['255.255.255.255', 'broadcast'],
    ['192.0.2.1', 'reserved'], // TEST-NET-1
    ['198.51.100.7', 'reserved'], // TEST-NET-2
    ['203.0.113.9', 'reserved'], // TEST-NET-3
    ['198.18.0.1', 'reserved'], // benchmarking, as ipaddr.js names it for IPv4
    ['240.0.0.1', 'reserved'],
    ['2001:db8::1', 'reserved'],
    ['2001:2::1', 'benchmarking'],
    ['2002:7f00:1::', '6to4'],
    ['2001:0:4136:e378::1', 'teredo'],
    ['64:ff9b:1::808:808', 'rfc6052'], // local-use NAT64: where the IPv4 address sits is the network's choice
    ['64:ff9b:1::7f00:1', 'rfc6052'],
    ['64:ff9b:0:0:1::808:808', 'rfc6052'], // 64:ff9b::/32 outside both prefixes
    ['64:ff9b:ffff::a9fe:a9fe', 'rfc6052'],
    ['::ffff:0:7f00:1', 'rfc6145'],
    ['::7f00:1', 'ipv4Compatible'], // deprecated ::a.b.c.d form
    ['::a00:1', 'ipv4Compatible'],
  ])('refuses %s (%s)', (ip, range) => {
    expect(classifyAddress(ip)).toMatchObject({ allowed: false, range });
  });

  it.each([
    ['::ffff:127.0.0.1', 'loopback', '127.0.0.1', 'IPv4-mapped'],
    ['::ffff:7f00:1', 'loopback', '127.0.0.1', 'IPv4-mapped'],
    ['::ffff:169.254.169.254', 'linkLocal', '169.254.169.254', 'IPv4-mapped'],
    ['::ffff:10.1.2.3', 'private', '10.1.2.3', 'IPv4-mapped'],
    ['0:0:0:0:0:ffff:c0a8:0101', 'private', '192.168.1.1', 'IPv4-mapped'],
    ['64:ff9b::7f00:1', 'loopback', '127.0.0.1', 'NAT64'],
    ['64:ff9b::127.0.0.1', 'loopback', '127.0.0.1', 'NAT64'],
    ['64:ff9b::a9fe:a9fe', 'linkLocal', '169.254.169.254', 'NAT64'],
    ['64:ff9b::a00:1', 'private', '10.0.0.1', 'NAT64'],
    ['64:ff9b::6440:1', 'carrierGradeNat', '100.64.0.1', 'NAT64'],
    ['64:ff9b::', 'unspecified', '0.0.0.0', 'NAT64'],
    ['64:ff9b::ffff:ffff', 'broadcast', '255.255.255.255', 'NAT64'],
    ['64:ff9b::e000:1', 'multicast', '224.0.0.1', 'NAT64'],
    ['64:ff9b::f000:1', 'reserved', '240.0.0.1', 'NAT64'],
    ['64:FF9B::A9FE:A9FE', 'linkLocal', '169.254.169.254', 'NAT64'],
    ['0064:ff9b:0000:0000:0000:0000:a9fe:a9fe', 'linkLocal', '169.254.169.254', 'NAT64'],
  ])('checks the IPv4 inside %s', (ip, range, embedded, form) => {
    expect(classifyAddress(ip)).toEqual({ allowed: false, range, embedded, form, ...wellKnown(form) });
  });

  it.each(['8.8.8.8', '1.1.1.1', '93.184.216.34', '2606:4700::1111', '2a00:1450:4001:82b::200e'])(
    'allows public %s',
    (ip) => {
      expect(classifyAddress(ip)).toEqual({ allowed: true, range: 'unicast' });
    },
  );

  it.each([
    // The OS reaches it over IPv4.
    ['::ffff:8.8.8.8', 'IPv4-mapped'],
    // As DNS64 answers on an IPv6-only host for a name with IPv4 addresses only.
    ['64:ff9b::808:808', 'NAT64'],
  ])('allows %s, standing for a public IPv4 address', (ip, form) => {
    expect(classifyAddress(ip)).toEqual({
      allowed: true,
      range: 'unicast',
      embedded: '8.8.8.8',
      form,
      ...wellKnown(form),
    });
  });

  it.each(['', 'localhost', '1.2.3.4.5', '999.1.1.1', '::g', 'example.com'])(
    'refuses non-address %j',
    (ip) => {
      expect(classifyAddress(ip)).toEqual({ allowed: false, range: 'invalid' });
    },
  );
});

describe('SsrfGuard.checkAddress', () => {
  it('explains a refusal in words a human acts on', () => {
    expect(new SsrfGuard().checkAddress('10.0.0.5')).toEqual({
      ok: false,
      reason:
        'refused: 10.0.0.5 is in a private network range (RFC 1918); allow it with COURIER_ALLOW_PRIVATE_NETWORKS',
    });
    const mapped = new SsrfGuard().checkAddress('::ffff:169.254.169.254');
    expect(mapped.ok).toBe(false);
    if (!mapped.ok) expect(mapped.reason).toMatch(/IPv4-mapped form of 169\.254\.169\.254.*link-local/);
    expect(new SsrfGuard().checkAddress('64:ff9b::a9fe:a9fe')).toEqual({
      ok: false,
      reason:
        'refused: 64:ff9b::a9fe:a9fe is the NAT64 form (in 64:ff9b::/96) of 169.254.169.254, which is a link-local address (this includes cloud metadata endpoints such as 169.254.169.254); allow it with COURIER_ALLOW_PRIVATE_NETWORKS',
    });
  });

  it('opens only the chosen CIDRs', () => {
    const guard = new SsrfGuard(['127.0.0.0/8', '::1/128']);
    expect(guard.checkAddress('127.0.0.1')).toEqual({ ok: true });
    expect(guard.checkAddress('127.9.9.9')).toEqual({ ok: true });
    expect(guard.checkAddress('::1')).toEqual({ ok: true });
    expect(guard.checkAddress('::ffff:127.0.0.1')).toEqual({ ok: true }); // same destination as 127.0.0.1
    expect(guard.checkAddress('64:ff9b::7f00:1').ok).toBe(false); // a gateway's, not this host's
    const nat64 = new SsrfGuard(['64:ff9b::a00:0/104']); // 10.0.0.0/8 through the gateway
    expect(nat64.checkAddress('64:ff9b::a00:1')).toEqual({ ok: true });
    expect(nat64.checkAddress('64:ff9b::a9fe:a9fe').ok).toBe(false);
    expect(nat64.checkAddress('10.0.0.1').ok).toBe(false);
    expect(guard.checkAddress('10.0.0.1').ok).toBe(false);
    expect(guard.checkAddress('169.254.169.254').ok).toBe(false);
    expect(guard.checkAddress('::2').ok).toBe(false);
    expect(guard.checkAddress('8.8.8.8')).toEqual({ ok: true });
  });

  it('accepts bare addresses as single-host entries', () => {
    const guard = new SsrfGuard([' 10.0.0.7 ', 'fd00::7']);
    expect(guard.checkAddress('10.0.0.7')).toEqual({ ok: true });
    expect(guard.checkAddress('10.0.0.8').ok).toBe(false);
    expect(guard.checkAddress('fd00::7')).toEqual({ ok: true });
    expect(guard.checkAddress('fd00::8').ok).toBe(false);
  });

  it.each(['10.0.0.0/33', 'not-a-cidr', '10.0.0/8', '127.1', '0x7f000001/8', '::1/129', '10.0.0.0/8/8', ''])(
    'rejects the allow-list entry %j',
    (entry) => {
      expect(() => new SsrfGuard(['127.0.0.0/8', entry])).toThrow(
        new RegExp(`COURIER_ALLOW_PRIVATE_NETWORKS: "${entry.replace(/[./]/g, '\\$&')}" is not a valid CIDR`),
      );
    },
  );
});

describe('SsrfGuard.checkUrl', () => {
  const guard = new SsrfGuard();

  it.each([
    'https://hooks.example.com/in',
    'http://example.com:8080/a?b=c',
    'https://8.8.8.8/x',
    'http://[2606:4700::1111]/',
    'http://[64:ff9b::808:808]/',
  ])('accepts %s', (url) => {
    expect(guard.checkUrl(url)).toEqual({ ok: true });
  });

  it('accepts hostnames without resolving them: they are checked at connect time', () => {
    expect(guard.checkUrl('http://localhost:3000/hook')).toEqual({ ok: true });
  });

  it.each([
    'ftp://example.com/x',
    'file:///etc/passwd',
    'javascript:alert(1)',
    'gopher://example.com/',
    'ws://example.com/',
  ])('refuses the scheme of %s', (url) => {
    const result = guard.checkUrl(url);
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.reason).toMatch(/^refused: scheme ".+" is not allowed; use http or https$/);
  });

  it.each(['https://user:secret@example.com/', 'https://user@example.com/', 'https://:secret@example.com/'])(
    'refuses credentials in %s without echoing them',
    (url) => {
      const result = guard.checkUrl(url);
      expect(result).toEqual({
        ok: false,
        reason: 'refused: credentials in the endpoint URL are not allowed; use headers instead',
      });
    },
  );

  it.each(['not a url', '/relative/path', 'http://', 'https://exa mple.com/', 'http://1.2.3.4.5/'])(
    'refuses the unparseable %j',
    (url) => {
      expect(guard.checkUrl(url).ok).toBe(false);
    },
  );

  it.each([
    ['http://10.0.0.5/hook', '10.0.0.5', 'private network'],
    ['http://169.254.169.254/latest/meta-data/', '169.254.169.254', 'link-local'],
    ['http://[::1]:8080/', '::1', 'loopback'],
    ['http://[fd00::1]/', 'fd00::1', 'unique-local'],
    ['http://[::ffff:127.0.0.1]/', '::ffff:7f00:1', 'loopback'],
    // WHATWG URL normalises odd IPv4 spellings before we look at them.
    ['http://0x7f.1/', '127.0.0.1', 'loopback'],
    ['http://2130706433/', '127.0.0.1', 'loopback'],
    ['http://017700000001/', '127.0.0.1', 'loopback'],
    ['http://127.1/', '127.0.0.1', 'loopback'],
    ['http://127.0.0.1./', '127.0.0.1', 'loopback'],
    ['http://%31%32%37.0.0.1/', '127.0.0.1', 'loopback'],
    ['http://0/', '0.0.0.0', 'unspecified'],
    ['http://0xa9fea9fe/', '169.254.169.254', 'link-local'],
    ['HTTP://192.168.0.1:80/', '192.168.0.1', 'private network'],
  ])('refuses the literal address in %s', (url, ip, words) => {
    const result = guard.checkUrl(url);
    expect(result.ok).toBe(false);
    if (!result.ok) {
      expect(result.reason).toContain(`refused: ${ip} is`);
      expect(result.reason).toContain(words);
      expect(result.reason).toContain('COURIER_ALLOW_PRIVATE_NETWORKS');
    }
  });

  it('lets the allow-list open a chosen range and nothing else', () => {
    const open = new SsrfGuard(['127.0.0.0/8']);
    expect(open.checkUrl('http://127.0.0.1:9000/')).toEqual({ ok: true });
    expect(open.checkUrl('http://0x7f.1/')).toEqual({ ok: true });
    expect(open.checkUrl('http://10.0.0.1/').ok).toBe(false);
    expect(open.checkUrl('http://[::1]/').ok).toBe(false);
    expect(open.checkUrl('ftp://127.0.0.1/').ok).toBe(false);
  });
});

/** A resolver that answers from a table, as dns.lookup({all: true}) would. */
function fakeResolver(answers: Record<string, string[]>): Resolver & { calls: string[] } {
  const calls: string[] = [];
  const resolver = (
    hostname: string,
    _options: dns.LookupAllOptions,
    callback: (err: NodeJS.ErrnoException | null, addresses: dns.LookupAddress[]) => void,
  ) => {
    calls.push(hostname);
    const found = answers[hostname];
    if (!found) {
      const err: NodeJS.ErrnoException = new Error(`getaddrinfo ENOTFOUND ${hostname}`);
      err.code = 'ENOTFOUND';
      queueMicrotask(() => callback(err, []));
      return;
    }
    const addresses = found.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
    queueMicrotask(() => callback(null, addresses));
  };
  return Object.assign(resolver, { calls });
}

type LookupOutcome = {
  err: NodeJS.ErrnoException | null;
  address: string | dns.LookupAddress[];
  family?: number;
};

function lookup(fn: ReturnType<typeof guardedLookup>, host: string, options: dns.LookupOptions) {
  return new Promise<LookupOutcome>((resolve) =>
    fn(host, options, (err, address, family) => resolve({ err, address, family })),
  );
}

describe('guardedLookup', () => {
  it('refuses a name when any resolved address is refused', async () => {
    const fn = guardedLookup(new SsrfGuard(), fakeResolver({ 'mixed.test': ['93.184.216.34', '127.0.0.1'] }));
    const { err } = await lookup(fn, 'mixed.test', { all: true });
    expect(err?.code).toBe('ERR_SSRF_REFUSED');
    expect(err?.message).toBe(
      'refused: mixed.test resolves to an address which is a loopback address; allow it with COURIER_ALLOW_PRIVATE_NETWORKS',
    );
  });

  it('passes the NAT64 address DNS64 gives a name with public IPv4 addresses only, and refuses an internal one', async () => {
    const fn = guardedLookup(
      new SsrfGuard(),
      fakeResolver({ 'v4only.test': ['64:ff9b::5db8:d822'], 'metadata.test': ['64:ff9b::a9fe:a9fe'] }),
    );
    expect(await lookup(fn, 'v4only.test', { all: true })).toEqual({
      err: null,
      address: [{ address: '64:ff9b::5db8:d822', family: 6 }],
      family: undefined,
    });
    const { err } = await lookup(fn, 'metadata.test', { all: true });
    expect(err?.code).toBe('ERR_SSRF_REFUSED');
    // Not the address: which entry would open it.
    expect(err?.message).toBe(
      'refused: metadata.test resolves to a NAT64 address of an IPv4 address which is a link-local address (this includes cloud metadata endpoints such as 169.254.169.254); allow its NAT64 form (an IPv6 entry within 64:ff9b::/96) with COURIER_ALLOW_PRIVATE_NETWORKS',
    );
  });

  it('hands back exactly the checked addresses (options.all, as happy-eyeballs connect asks)', async () => {
    const fn = guardedLookup(
      new SsrfGuard(),
      fakeResolver({ 'ok.test': ['93.184.216.34', '2606:4700::1111'] }),
    );
    const { err, address } = await lookup(fn, 'ok.test', { all: true });
    expect(err).toBeNull();
    expect(address).toEqual([
      { address: '93.184.216.34', family: 4 },
      { address: '2606:4700::1111', family: 6 },
    ]);
  });

  it('pins the connection to the address it checked, whatever a second resolution would say', async () => {
    // Rebinding: the first answer is public, every later one points inside.
    let calls = 0;
    const rebinding: Resolver = (_host, _options, callback) => {
      calls += 1;
      const address = calls === 1 ? '93.184.216.34' : '127.0.0.1';
      queueMicrotask(() => callback(null, [{ address, family: 4 }]));
    };
    const fn = guardedLookup(new SsrfGuard(), rebinding);
    const first = await lookup(fn, 'rebind.test', {});
    expect(first).toEqual({ err: null, address: '93.184.216.34', family: 4 });
    expect(calls).toBe(1); // one resolution, both checked and returned: no second look-up to race
    const second = await lookup(fn, 'rebind.test', {});
    expect(second.err?.code).toBe('ERR_SSRF_REFUSED');
  });

  it('asks the resolver for every address even when the caller wants one', async () => {
    const seen: dns.LookupAllOptions[] = [];
    const resolver: Resolver = (_host, options, callback) => {
      seen.push(options);
      queueMicrotask(() => callback(null, [{ address: '10.0.0.1', family: 4 }]));
    };
    const { err } = await lookup(guardedLookup(new SsrfGuard(), resolver), 'inside.test', { family: 4 });
    expect(seen).toEqual([{ family: 4, all: true }]);
    expect(err?.code).toBe('ERR_SSRF_REFUSED');
  });

  it('shares a lookup in flight, and survives a resolver that throws or answers twice', async () => {
    let calls = 0;
    const odd: Resolver = (host, _options, callback) => {
      calls += 1;
      if (host === 'throws.test' && calls === 1) throw new Error('resolver broke');
      queueMicrotask(() => {
        callback(null, [{ address: '93.184.216.34', family: 4 }]);
        callback(null, [{ address: '127.0.0.1', family: 4 }]); // a stray second answer
      });
    };
    const fn = guardedLookup(new SsrfGuard(), odd);
    expect((await lookup(fn, 'throws.test', {})).err?.message).toBe('resolver broke');
    const [a, b] = await Promise.all([lookup(fn, 'throws.test', {}), lookup(fn, 'throws.test', {})]);
    expect([a.address, b.address, calls]).toEqual(['93.184.216.34', '93.184.216.34', 2]);
    // The stray answer reaches no later lookup.
    expect((await lookup(fn, 'throws.test', {})).address).toBe('93.184.216.34');
  });

  it('passes DNS failures through unchanged and treats an empty answer as not found', async () => {
    const fn = guardedLookup(new SsrfGuard(), fakeResolver({ 'empty.test': [] }));
    expect((await lookup(fn, 'missing.test', {})).err?.code).toBe('ENOTFOUND');
    expect((await lookup(fn, 'empty.test', {})).err?.code).toBe('ENOTFOUND');
  });

  it('uses the allow-list', async () => {
    const resolver = fakeResolver({ 'dev.test': ['127.0.0.1', '::1'] });
    expect(
      (await lookup(guardedLookup(new SsrfGuard(['127.0.0.0/8']), resolver), 'dev.test', { all: true })).err
        ?.code,
    ).toBe('ERR_SSRF_REFUSED');
    const open = await lookup(
      guardedLookup(new SsrfGuard(['127.0.0.0/8', '::1/128']), resolver),
      'dev.test',
      {},
    );
    expect(open).toEqual({ err: null, address: '127.0.0.1', family: 4 });
  });
});

describe('network-specific NAT64 prefixes (COURIER_NAT64_PREFIXES)', () => {
  // A global prefix, as a network's DNS64 may choose: unnamed, its addresses look public.
  const PREFIX = '2a00:1450:64::/96';
  const named = new SsrfGuard([], [PREFIX, '64:ff9b:1:fffe::/96']);

  it('judges an address within a named prefix by the IPv4 address it carries', () => {
    expect(new SsrfGuard().checkAddress('2a00:1450:64::a9fe:a9fe')).toEqual({ ok: true });
    expect(named.checkAddress('2a00:1450:64::a9fe:a9fe')).toEqual({
      ok: false,
      reason:
        'refused: 2a00:1450:64::a9fe:a9fe is the NAT64 form (in 2a00:1450:64::/96) of 169.254.169.254, which is a link-local address (this includes cloud metadata endpoints such as 169.254.169.254); allow it with COURIER_ALLOW_PRIVATE_NETWORKS',
    });
    expect(named.checkAddress('2a00:1450:64::7f00:1').ok).toBe(false);
    expect(named.checkAddress('2a00:1450:64::a00:1').ok).toBe(false);
    expect(named.checkAddress('2a00:1450:64::808:808')).toEqual({ ok: true });
    expect(named.checkAddress('2a00:1450:65::a9fe:a9fe')).toEqual({ ok: true }); // outside it: an IPv6 address
    expect(named.checkUrl('http://[2a00:1450:64::a00:5]/hook').ok).toBe(false);
  });

  it('opens a local-use prefix it names, which is refused whatever it carries unnamed', () => {
    expect(new SsrfGuard().checkAddress('64:ff9b:1:fffe::808:808').ok).toBe(false);
    expect(named.checkAddress('64:ff9b:1:fffe::808:808')).toEqual({ ok: true });
    expect(reason(named.checkAddress('64:ff9b:1:fffe::a00:1'))).toMatch(
      /^refused: 64:ff9b:1:fffe::a00:1 is the NAT64 form \(in 64:ff9b:1:fffe::\/96\) of 10\.0\.0\.1, which is in a private/,
    );
    // The rest of the /48, and the well-known prefix, still decoded.
    expect(reason(named.checkAddress('64:ff9b:1:ffff::808:808'))).toMatch(/is a NAT64 address outside/);
    expect(reason(named.checkAddress('64:ff9b::a9fe:a9fe'))).toMatch(
      /\(in 64:ff9b::\/96\) of 169\.254\.169\.254/,
    );
  });

  it('reads a shorter prefix as RFC 6052 places the IPv4 address, and refuses what is no form of one', () => {
    const slash64 = new SsrfGuard([], ['2a00:1450:64:1::/64']);
    expect(reason(slash64.checkAddress('2a00:1450:64:1:a9:fea9:fe00:0'))).toMatch(
      /\(in 2a00:1450:64:1::\/64\) of 169\.254\.169\.254, which is a link-local/,
    );
    expect(slash64.checkAddress('2a00:1450:64:1:8:808:800:0')).toEqual({ ok: true }); // 8.8.8.8
    // An interface identifier: read past bits 64–71 it would be 17.34.255.254, a public address.
    expect(reason(slash64.checkAddress('2a00:1450:64:1:211:22ff:fe33:4455'))).toMatch(
      /^refused: 2a00:1450:64:1:211:22ff:fe33:4455 is in a NAT64 prefix, but with bits set that RFC 6052 keeps zero/,
    );
    expect(new SsrfGuard().checkAddress('2a00:1450:64:1:211:22ff:fe33:4455')).toEqual({ ok: true });
    expect(reason(slash64.checkAddress('2a00:1450:64:1:a9:fea9:fe00:0%eth0'))).toMatch(
      /of 169\.254\.169\.254/,
    );
  });

  it('opens a NAT64 form by an IPv6 allow entry within the prefix, and says so for a host name', async () => {
    const open = new SsrfGuard(['2a00:1450:64::a00:0/104'], [PREFIX]);
    expect(open.checkAddress('2a00:1450:64::a00:1')).toEqual({ ok: true });
    // Under a /64 the IPv4 address starts at bit 72 (the configuration table's example).
    const slash64 = new SsrfGuard(['2001:db8:122:344:a::/80'], ['2001:db8:122:344::/64']);
    expect(slash64.checkAddress('2001:db8:122:344:a:102:300:0')).toEqual({ ok: true }); // 10.1.2.3
    expect(slash64.checkAddress('2001:db8:122:344:c0:a801:100:0').ok).toBe(false); // 192.168.1.1
    expect(open.checkAddress('2a00:1450:64::a9fe:a9fe').ok).toBe(false);
    const fn = guardedLookup(named, fakeResolver({ 'internal.test': ['2a00:1450:64::a00:1'] }));
    const { err } = await lookup(fn, 'internal.test', { all: true });
    expect(err?.message).toBe(
      'refused: internal.test resolves to a NAT64 address of an IPv4 address which is in a private network range (RFC 1918); allow its NAT64 form (an IPv6 entry within its prefix in COURIER_NAT64_PREFIXES) with COURIER_ALLOW_PRIVATE_NETWORKS',
    );
  });

  it('stops on a bad prefix with the setting named', () => {
    expect(() => new SsrfGuard([], ['2a00:1450:64::/95'])).toThrow(
      /^COURIER_NAT64_PREFIXES: "2a00:1450:64::\/95"/,
    );
  });
});

describe("Azure's platform address", () => {
  it.each(['168.63.129.16', '::ffff:168.63.129.16', '64:ff9b::a83f:8110'])('refuses %s', (ip) => {
    expect(classifyAddress(ip)).toMatchObject({ allowed: false, range: 'azurePlatform' });
  });

  it('refuses it through a named NAT64 prefix and behind a host name, without naming it there', async () => {
    const guard = new SsrfGuard([], ['2a00:1450:64::/96']);
    expect(reason(guard.checkAddress('2a00:1450:64::a83f:8110'))).toMatch(
      /of 168\.63\.129\.16, which is Azure's/,
    );
    const { err } = await lookup(
      guardedLookup(guard, fakeResolver({ 'wire.test': ['168.63.129.16'] })),
      'wire.test',
      { all: true },
    );
    expect(err?.message).toBe(
      "refused: wire.test resolves to an address which is Azure's platform address, which answers from inside Azure only (its WireServer hands VM agents their configuration); allow it with COURIER_ALLOW_PRIVATE_NETWORKS",
    );
  });

  it('refuses it in words, opens it by an allow entry, and leaves its neighbours public', () => {
    expect(new SsrfGuard().checkUrl('http://168.63.129.16/machine?comp=goalstate')).toEqual({
      ok: false,
      reason:
        "refused: 168.63.129.16 is Azure's platform address, which answers from inside Azure only (its WireServer hands VM agents their configuration); allow it with COURIER_ALLOW_PRIVATE_NETWORKS",
    });
    expect(new SsrfGuard(['168.63.129.16']).checkAddress('168.63.129.16')).toEqual({ ok: true });
    expect(new SsrfGuard(['168.63.129.16']).checkAddress('::ffff:168.63.129.16')).toEqual({ ok: true });
    expect(classifyAddress('168.63.129.15')).toEqual({ allowed: true, range: 'unicast' });
    expect(classifyAddress('168.63.129.17')).toEqual({ allowed: true, range: 'unicast' });
  });
});

describe('SsrfGuard.publicOnly (URLs an application owner set with its token)', () => {
  const operator = new SsrfGuard(
    ['127.0.0.0/8', '10.0.0.0/8', '2a00:1450:64::a00:0/104'],
    ['2a00:1450:64::/96'],
  );
  const customer = operator.publicOnly();
  const PUBLIC_ONLY =
    "this endpoint is public-only (publicOnly: its URL set with an application's token, or so set by the admin token), so COURIER_ALLOW_PRIVATE_NETWORKS does not apply to it";

  it('opens nothing of the allow list, and says so instead of suggesting it', () => {
    expect(operator.checkUrl('http://10.1.2.3/hook')).toEqual({ ok: true });
    expect(customer.checkUrl('http://10.1.2.3/hook')).toEqual({
      ok: false,
      reason: `refused: 10.1.2.3 is in a private network range (RFC 1918); ${PUBLIC_ONLY}`,
    });
    expect(reason(customer.checkAddress('127.0.0.1'))).toBe(
      `refused: 127.0.0.1 is a loopback address; ${PUBLIC_ONLY}`,
    );
    expect(customer.checkAddress('8.8.8.8')).toEqual({ ok: true });
    // The operator's guard keeps its allow list; a public-only one takes none, whatever it is given.
    expect(operator.checkAddress('127.0.0.1')).toEqual({ ok: true });
    expect(new SsrfGuard(['127.0.0.0/8'], [], true).checkAddress('127.0.0.1').ok).toBe(false);
  });

  it('keeps the NAT64 prefixes, which say what an address is', () => {
    expect(operator.checkAddress('2a00:1450:64::a00:1')).toEqual({ ok: true });
    expect(reason(customer.checkAddress('2a00:1450:64::a00:1'))).toBe(
      `refused: 2a00:1450:64::a00:1 is the NAT64 form (in 2a00:1450:64::/96) of 10.0.0.1, which is in a private network range (RFC 1918); ${PUBLIC_ONLY}`,
    );
    expect(customer.checkAddress('2a00:1450:64::808:808')).toEqual({ ok: true });
  });

  it('refuses what a host name resolves to, without naming the address or suggesting the allow list', async () => {
    const resolver = fakeResolver({ 'internal.test': ['10.0.0.7'], 'nat.test': ['2a00:1450:64::a00:1'] });
    const plain = await lookup(guardedLookup(customer, resolver), 'internal.test', { all: true });
    expect(plain.err?.message).toBe(
      `refused: internal.test resolves to an address which is in a private network range (RFC 1918); ${PUBLIC_ONLY}`,
    );
    const nat = await lookup(guardedLookup(customer, resolver), 'nat.test', { all: true });
    expect(nat.err?.message).toBe(
      `refused: nat.test resolves to a NAT64 address of an IPv4 address which is in a private network range (RFC 1918); ${PUBLIC_ONLY}`,
    );
    expect((await lookup(guardedLookup(operator, resolver), 'internal.test', {})).err).toBeNull();
  });
});
