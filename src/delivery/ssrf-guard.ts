/**
 * The delivery side of SSRF protection: which addresses a webhook may reach, checked once when an
 * endpoint URL is saved (literal IPs) and again on every connection (the DNS lookup hook below pins
 * the socket to the addresses that were checked, so rebinding cannot slip in between).
 */
import dns from 'node:dns';
import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';

export const ALLOW_ENV = 'COURIER_ALLOW_PRIVATE_NETWORKS';
export const SSRF_REFUSED = 'ERR_SSRF_REFUSED';

export interface AddressClass {
  readonly allowed: boolean;
  /** ipaddr.js's range name ('unicast', 'loopback', 'private', ...), or 'invalid'/'ipv4Compatible'. */
  readonly range: string;
  /** For an IPv6 address that stands for an IPv4 one: that IPv4 address, which was classified. */
  readonly embedded?: string;
  /** How it stands for it (see embeddedIPv4). */
  readonly form?: EmbeddingForm;
}

type EmbeddingForm = 'IPv4-mapped' | 'NAT64';

export type CheckResult = { readonly ok: true } | { readonly ok: false; readonly reason: string };

type Addr = ipaddr.IPv4 | ipaddr.IPv6;

const DESCRIPTIONS: Readonly<Record<string, string>> = {
  loopback: 'a loopback address',
  private: 'in a private network range (RFC 1918)',
  linkLocal: 'a link-local address (this includes cloud metadata endpoints such as 169.254.169.254)',
  carrierGradeNat: 'in the carrier-grade NAT range (RFC 6598)',
  uniqueLocal: 'a unique-local IPv6 address (fc00::/7)',
  multicast: 'a multicast address',
  unspecified: 'the unspecified address',
  broadcast: 'the broadcast address',
  reserved: 'in a reserved or documentation range',
  benchmarking: 'in a benchmarking range',
  rfc6052:
    'a NAT64 address outside the well-known prefix 64:ff9b::/96 (the local-use 64:ff9b:1::/48, say), which can carry any IPv4 address',
  rfc6145: 'an IPv4-translated IPv6 address (RFC 6145)',
  ipv4Compatible: 'an IPv4-compatible IPv6 address (deprecated ::/96)',
  '6to4': 'a 6to4 relay address (2002::/16)',
  teredo: 'a Teredo tunnel address (2001::/32)',
  invalid: 'not a valid IP address',
};

function describe(range: string): string {
  return DESCRIPTIONS[range] ?? `in the special-purpose range "${range}"`;
}

function parse(ip: string): Addr | undefined {
  return ipaddr.isValid(ip) ? ipaddr.parse(ip) : undefined;
}

/** The IPv4 address an IPv6 address stands for when the OS would connect to it over IPv4. */
function mappedIPv4(addr: Addr): ipaddr.IPv4 | undefined {
  return addr.kind() === 'ipv6' && (addr as ipaddr.IPv6).isIPv4MappedAddress()
    ? (addr as ipaddr.IPv6).toIPv4Address()
    : undefined;
}

function rangeOf(addr: Addr): string {
  const range = addr.range();
  // ipaddr.js calls ::a.b.c.d (other than :: and ::1) 'unicast'; it is never a public destination.
  // Nor the rest of 64:ff9b::/32 beside NAT64's two prefixes: unassigned, and near enough to them
  // to carry an IPv4 address to a translator that takes a wider prefix.
  if (range === 'unicast' && addr.kind() === 'ipv6') {
    const parts = (addr as ipaddr.IPv6).parts;
    if (parts.slice(0, 6).every((part) => part === 0)) return 'ipv4Compatible';
    if (parts[0] === 0x64 && parts[1] === 0xff9b) return 'rfc6052';
  }
  return range;
}

/**
 * The IPv4 address an IPv6 address stands for: IPv4-mapped (the OS connects to it over IPv4), or
 * in NAT64's well-known prefix 64:ff9b::/96, which a NAT64 gateway translates to its last 32 bits
 * (an IPv6-only host's DNS64 answers so for a name with IPv4 addresses only: were all refused, no
 * IPv4-only receiver could be reached from it). The local-use prefix 64:ff9b:1::/48 places the
 * IPv4 address by a prefix length its network chooses: it is refused whatever it carries. A
 * network-specific prefix (any other, chosen by the network's DNS64) is not known here, and its
 * addresses are judged as the IPv6 addresses they are.
 */
function embeddedIPv4(addr: Addr): { v4: ipaddr.IPv4; form: EmbeddingForm } | undefined {
  const mapped = mappedIPv4(addr);
  if (mapped) return { v4: mapped, form: 'IPv4-mapped' };
  if (addr.kind() !== 'ipv6') return undefined;
  const p = (addr as ipaddr.IPv6).parts;
  if (p[0] !== 0x64 || p[1] !== 0xff9b || p.slice(2, 6).some((part) => part !== 0)) return undefined;
  return { v4: new ipaddr.IPv4([p[6]! >> 8, p[6]! & 0xff, p[7]! >> 8, p[7]! & 0xff]), form: 'NAT64' };
}

function classifyParsed(addr: Addr): AddressClass {
  const embedded = embeddedIPv4(addr);
  if (embedded) {
    const range = embedded.v4.range();
    return { allowed: range === 'unicast', range, embedded: embedded.v4.toString(), form: embedded.form };
  }
  const range = rangeOf(addr);
  return { allowed: range === 'unicast', range };
}

/** Default policy: only ipaddr.js's public 'unicast' range may be reached. */
export function classifyAddress(ip: string): AddressClass {
  const addr = parse(ip);
  return addr ? classifyParsed(addr) : { allowed: false, range: 'invalid' };
}

/**
 * Why an address is refused. For a host name, not the address it resolved to: the reason reaches
 * the attempt log, which a portal may show the endpoint's owner, who would learn what internal
 * names resolve to.
 */
function refusal(ip: string, cls: AddressClass, hostname?: string): string {
  if (hostname !== undefined) {
    if (cls.range === 'invalid')
      return `refused: ${hostname} resolves to an address which is not a valid IP address; allow it with ${ALLOW_ENV}`;
    // An IPv4 entry of the allow list does not open a NAT64 form: say which entry would.
    return cls.form === 'NAT64'
      ? `refused: ${hostname} resolves to a NAT64 address of an IPv4 address which is ${describe(cls.range)}; allow its NAT64 form (an IPv6 entry within 64:ff9b::/96) with ${ALLOW_ENV}`
      : `refused: ${hostname} resolves to an address which is ${describe(cls.range)}; allow it with ${ALLOW_ENV}`;
  }
  if (cls.range === 'invalid') return `refused: ${ip} is not a valid IP address`;
  const what = cls.embedded
    ? `${ip} is the ${cls.form} form of ${cls.embedded}, which is ${describe(cls.range)}`
    : `${ip} is ${describe(cls.range)}`;
  return `refused: ${what}; allow it with ${ALLOW_ENV}`;
}

/** Raised through the connector when a resolved address is refused; maps to a 'refused' outcome. */
export class SsrfRefusedError extends Error {
  readonly code = SSRF_REFUSED;
  constructor(readonly reason: string) {
    super(reason);
    this.name = 'SsrfRefusedError';
  }
}

export class SsrfGuard {
  readonly #allow: ReadonlyArray<[Addr, number]>;

  /** @param allow CIDRs (or bare addresses) that may be reached although not public, e.g. `['127.0.0.0/8', '::1/128']`. */
  constructor(allow: readonly string[] = []) {
    this.#allow = allow.map(parseAllowEntry);
  }

  /** @param hostname the name `ip` was resolved from, for the refusal reason. */
  checkAddress(ip: string, hostname?: string): CheckResult {
    const addr = parse(ip);
    if (!addr) return { ok: false, reason: refusal(ip, { allowed: false, range: 'invalid' }, hostname) };
    if (this.#allowed(addr)) return { ok: true };
    const cls = classifyParsed(addr);
    return cls.allowed ? { ok: true } : { ok: false, reason: refusal(ip, cls, hostname) };
  }

  /**
   * For saving endpoints and before each send: the URL must be http(s) without credentials; a literal
   * IP host is checked now, a hostname only once it resolves (see guardedLookup).
   */
  checkUrl(url: string): CheckResult {
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      return { ok: false, reason: 'refused: the endpoint URL is not a valid absolute URL' };
    }
    if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
      return {
        ok: false,
        reason: `refused: scheme "${parsed.protocol.slice(0, -1)}" is not allowed; use http or https`,
      };
    }
    // Never echo the URL here: it carries the credentials we refuse.
    if (parsed.username !== '' || parsed.password !== '') {
      return {
        ok: false,
        reason: 'refused: credentials in the endpoint URL are not allowed; use headers instead',
      };
    }
    const host = literalHost(parsed.hostname);
    if (host === '') return { ok: false, reason: 'refused: the endpoint URL has no host' };
    return isIP(host) === 0 ? { ok: true } : this.checkAddress(host);
  }

  /**
   * An IPv4 entry covers the mapped form, not the NAT64 one: what a gateway translates to is not
   * this host's network. An IPv6 entry in 64:ff9b::/96 does (64:ff9b::a00:0/104 for 10.0.0.0/8).
   */
  #allowed(addr: Addr): boolean {
    const v4 = mappedIPv4(addr);
    for (const cidr of this.#allow) {
      const kind = cidr[0].kind();
      if (kind === addr.kind() && addr.match(cidr)) return true;
      if (v4 && kind === 'ipv4' && v4.match(cidr)) return true;
    }
    return false;
  }
}

/** WHATWG keeps IPv6 literals bracketed in `hostname`. */
function literalHost(hostname: string): string {
  return hostname.startsWith('[') && hostname.endsWith(']') ? hostname.slice(1, -1) : hostname;
}

function parseAllowEntry(entry: string): [Addr, number] {
  const text = entry.trim();
  const [address = '', prefix] = text.split('/', 2);
  // Strict here (no "10.1" or hex forms): a typo in this list widens what may be reached.
  const strict = ipaddr.IPv4.isValidFourPartDecimal(address) || ipaddr.IPv6.isValid(address);
  if (strict && prefix === undefined) {
    const addr = ipaddr.parse(address);
    return [addr, addr.kind() === 'ipv4' ? 32 : 128];
  }
  if (strict && ipaddr.isValidCIDR(text)) return ipaddr.parseCIDR(text);
  throw new Error(
    `${ALLOW_ENV}: "${entry}" is not a valid CIDR (expected e.g. 10.0.0.0/8, 127.0.0.1 or fd00::/8)`,
  );
}

export type Resolver = (
  hostname: string,
  options: dns.LookupAllOptions,
  callback: (err: NodeJS.ErrnoException | null, addresses: dns.LookupAddress[]) => void,
) => void;

type LookupCallback = (
  err: NodeJS.ErrnoException | null,
  address: string | dns.LookupAddress[],
  family?: number,
) => void;

/**
 * A `lookup` for net/tls.connect: resolves every address, refuses the whole name if any of them is
 * refused, and hands back only checked addresses, so the socket connects to what was checked.
 *
 * Connections opening at once to one name share one lookup. dns.lookup runs getaddrinfo on libuv's
 * small thread pool (4 threads by default), which cannot cancel it: without sharing, one endpoint
 * whose name server never answers would hold every thread with its in-flight requests, and other
 * endpoints' lookups would wait behind them until their deadline.
 */
export function guardedLookup(
  guard: SsrfGuard,
  resolver: Resolver = dns.lookup,
): (hostname: string, options: dns.LookupOptions, callback: LookupCallback) => void {
  const pending = new Map<
    string,
    Array<(err: NodeJS.ErrnoException | null, addresses: dns.LookupAddress[]) => void>
  >();
  const shared: Resolver = (hostname, options, callback) => {
    const key = `${hostname}\0${options.family ?? 0}\0${options.hints ?? 0}\0${options.order ?? ''}`;
    const waiting = pending.get(key);
    if (waiting) {
      waiting.push(callback);
      return;
    }
    const callbacks = [callback];
    pending.set(key, callbacks);
    let answered = false;
    const answer = (err: NodeJS.ErrnoException | null, addresses: dns.LookupAddress[]) => {
      if (answered) return; // a resolver that answers twice: the first answer stands
      answered = true;
      if (pending.get(key) === callbacks) pending.delete(key);
      for (const done of callbacks) done(err, addresses);
    };
    try {
      resolver(hostname, options, answer);
    } catch (error) {
      answer(error as NodeJS.ErrnoException, []);
    }
  };
  return (hostname, options, callback) => {
    shared(hostname, { ...options, all: true }, (err, addresses) => {
      if (err) return callback(err, []);
      if (addresses.length === 0) {
        const empty: NodeJS.ErrnoException = new Error(`getaddrinfo ENOTFOUND ${hostname}`);
        empty.code = 'ENOTFOUND';
        return callback(empty, []);
      }
      for (const { address } of addresses) {
        const check = guard.checkAddress(address, hostname);
        if (!check.ok) return callback(new SsrfRefusedError(check.reason), []);
      }
      if (options.all) return callback(null, addresses);
      const first = addresses[0]!;
      callback(null, first.address, first.family);
    });
  };
}
