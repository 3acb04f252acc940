/**
 * The delivery side of SSRF protection: which addresses a webhook may reach, checked once when an
 * endpoint URL is saved (literal IPs) and again on every connection (the DNS lookup hook below pins
 * the socket to the addresses that were checked, so rebinding cannot slip in between).
 */
import dns from 'node:dns';
import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';
import {
  carriedIPv4,
  GuardSettingError,
  NAT64_ENV,
  type Nat64Prefix,
  parseNat64Prefixes,
  WELL_KNOWN_NAT64,
} from './nat64.ts';

export const ALLOW_ENV = 'COURIER_ALLOW_PRIVATE_NETWORKS';
export const SSRF_REFUSED = 'ERR_SSRF_REFUSED';
/** What a public-only guard's refusals end with. */
export const PUBLIC_ONLY = `this endpoint is public-only (publicOnly: its URL set with an application's token, or so set by the admin token), so ${ALLOW_ENV} does not apply to it`;

export interface AddressClass {
  readonly allowed: boolean;
  /** ipaddr.js's range name ('unicast', 'loopback', 'private', ...), or 'invalid'/'ipv4Compatible'. */
  readonly range: string;
  /** For an IPv6 address that stands for an IPv4 one: that IPv4 address, which was classified. */
  readonly embedded?: string;
  /** How it stands for it (see embeddedIPv4). */
  readonly form?: EmbeddingForm;
  /** For the NAT64 form: the prefix it is in. */
  readonly nat64Prefix?: string;
}

type EmbeddingForm = 'IPv4-mapped' | 'NAT64';

export type CheckResult = { readonly ok: true } | { readonly ok: false; readonly reason: string };

type Addr = ipaddr.IPv4 | ipaddr.IPv6;

const DESCRIPTIONS: Readonly<Record<string, string>> = {
  loopback: 'a loopback address',
  private: 'in a private network range (RFC 1918)',
  linkLocal: 'a link-local address (this includes cloud metadata endpoints such as 169.254.169.254)',
  azurePlatform:
    "Azure's platform address, which answers from inside Azure only (its WireServer hands VM agents their configuration)",
  carrierGradeNat: 'in the carrier-grade NAT range (RFC 6598)',
  uniqueLocal: 'a unique-local IPv6 address (fc00::/7)',
  multicast: 'a multicast address',
  unspecified: 'the unspecified address',
  broadcast: 'the broadcast address',
  reserved: 'in a reserved or documentation range',
  benchmarking: 'in a benchmarking range',
  rfc6052: `a NAT64 address outside the well-known prefix 64:ff9b::/96 and those named in ${NAT64_ENV} (the local-use 64:ff9b:1::/48, say), which can carry any IPv4 address`,
  nat64Reserved:
    'in a NAT64 prefix, but with bits set that RFC 6052 keeps zero (64–71, or after the IPv4 address): the form of no IPv4 address',
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

/**
 * 168.63.129.16 is public by its range, but on Azure it is the host's own service (DNS, DHCP,
 * health probes, the VM agent's configuration), reached from inside the VM as a metadata endpoint is.
 */
const AZURE_PLATFORM = '168.63.129.16';

function rangeOfIPv4(v4: ipaddr.IPv4): string {
  return v4.toString() === AZURE_PLATFORM ? 'azurePlatform' : v4.range();
}

function rangeOf(addr: Addr): string {
  if (addr.kind() === 'ipv4') return rangeOfIPv4(addr as ipaddr.IPv4);
  const range = addr.range();
  // ipaddr.js calls ::a.b.c.d (other than :: and ::1) 'unicast'; it is never a public destination.
  // Nor the rest of 64:ff9b::/32 beside NAT64's two prefixes: unassigned, and near enough to them
  // to carry an IPv4 address to a translator that takes a wider prefix.
  if (range === 'unicast') {
    const parts = (addr as ipaddr.IPv6).parts;
    if (parts.slice(0, 6).every((part) => part === 0)) return 'ipv4Compatible';
    if (parts[0] === 0x64 && parts[1] === 0xff9b) return 'rfc6052';
  }
  return range;
}

interface Embedding {
  readonly v4: ipaddr.IPv4;
  readonly form: EmbeddingForm;
  readonly nat64?: Nat64Prefix;
}

/**
 * The IPv4 address an IPv6 address stands for: IPv4-mapped (the OS connects to it over IPv4), or
 * in a NAT64 prefix, which a NAT64 gateway translates to the IPv4 address it carries (an IPv6-only
 * host's DNS64 answers so for a name with IPv4 addresses only: were all refused, no IPv4-only
 * receiver could be reached from it). The well-known prefix 64:ff9b::/96 always; a network-specific
 * one (chosen by the network's DNS64) once COURIER_NAT64_PREFIXES names it, its addresses judged as
 * the IPv6 addresses they are until then. The local-use 64:ff9b:1::/48 places the IPv4 address by
 * a prefix length its network chooses: unnamed, it is refused whatever it carries. Null: within a
 * prefix, but no IPv4 address's form there (see carriedIPv4).
 */
function embeddedIPv4(addr: Addr, nat64: readonly Nat64Prefix[]): Embedding | null | undefined {
  const mapped = mappedIPv4(addr);
  if (mapped) return { v4: mapped, form: 'IPv4-mapped' };
  if (addr.kind() !== 'ipv6') return undefined;
  for (const prefix of nat64) {
    const v4 = carriedIPv4(addr as ipaddr.IPv6, prefix);
    if (v4 !== undefined) return v4 && { v4, form: 'NAT64', nat64: prefix };
  }
  return undefined;
}

function classifyParsed(addr: Addr, nat64: readonly Nat64Prefix[]): AddressClass {
  const embedded = embeddedIPv4(addr, nat64);
  if (embedded === null) return { allowed: false, range: 'nat64Reserved' };
  if (embedded) {
    const range = rangeOfIPv4(embedded.v4);
    const carried = {
      allowed: range === 'unicast',
      range,
      embedded: embedded.v4.toString(),
      form: embedded.form,
    };
    return embedded.nat64 ? { ...carried, nat64Prefix: embedded.nat64.text } : carried;
  }
  const range = rangeOf(addr);
  return { allowed: range === 'unicast', range };
}

/** Default policy: only ipaddr.js's public 'unicast' range may be reached. */
export function classifyAddress(ip: string): AddressClass {
  const addr = parse(ip);
  return addr ? classifyParsed(addr, [WELL_KNOWN_NAT64]) : { allowed: false, range: 'invalid' };
}

/**
 * Why an address is refused. For a host name, not the address it resolved to: the reason reaches
 * the attempt log, which a portal may show the endpoint's owner, who would learn what internal
 * names resolve to. `publicOnly`: the allow list does not apply, so the reason does not suggest it.
 */
function refusal(ip: string, cls: AddressClass, hostname: string | undefined, publicOnly: boolean): string {
  const allowIt = (what: string) => (publicOnly ? PUBLIC_ONLY : `allow ${what} with ${ALLOW_ENV}`);
  if (hostname !== undefined) {
    if (cls.range === 'invalid')
      return `refused: ${hostname} resolves to an address which is not a valid IP address; ${allowIt('it')}`;
    if (cls.form === 'NAT64') {
      // An IPv4 entry of the allow list does not open a NAT64 form: say which entry would, naming a
      // network's own prefix no more than the address.
      const within =
        cls.nat64Prefix === WELL_KNOWN_NAT64.text ? cls.nat64Prefix : `its prefix in ${NAT64_ENV}`;
      return `refused: ${hostname} resolves to a NAT64 address of an IPv4 address which is ${describe(cls.range)}; ${allowIt(`its NAT64 form (an IPv6 entry within ${within})`)}`;
    }
    return `refused: ${hostname} resolves to an address which is ${describe(cls.range)}; ${allowIt('it')}`;
  }
  if (cls.range === 'invalid') return `refused: ${ip} is not a valid IP address`;
  const form = cls.nat64Prefix ? `${cls.form} form (in ${cls.nat64Prefix})` : `${cls.form} form`;
  const what = cls.embedded
    ? `${ip} is the ${form} of ${cls.embedded}, which is ${describe(cls.range)}`
    : `${ip} is ${describe(cls.range)}`;
  return `refused: ${what}; ${allowIt('it')}`;
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
  readonly #nat64Prefixes: readonly string[];
  readonly #nat64: readonly Nat64Prefix[];
  /** No allow list: made by publicOnly(), its refusals say so. */
  readonly #publicOnly: boolean;

  /**
   * @param allow CIDRs (or bare addresses) that may be reached although not public, e.g. `['127.0.0.0/8', '::1/128']`.
   * @param nat64Prefixes network-specific NAT64 prefixes, e.g. `['64:ff9b:1:fffe::/96']`.
   * @throws GuardSettingError naming the setting an entry is wrong in.
   */
  constructor(allow: readonly string[] = [], nat64Prefixes: readonly string[] = [], publicOnly = false) {
    this.#allow = publicOnly ? [] : allow.map(parseAllowEntry);
    this.#nat64Prefixes = nat64Prefixes;
    this.#nat64 = [WELL_KNOWN_NAT64, ...parseNat64Prefixes(nat64Prefixes)];
    this.#publicOnly = publicOnly;
  }

  /**
   * This guard without its allow list, for URLs an endpoint's owner (a customer) set: the operator's
   * internal networks are the operator's. NAT64 prefixes still apply: they only say what an address is.
   */
  publicOnly(): SsrfGuard {
    return new SsrfGuard([], this.#nat64Prefixes, true);
  }

  /** @param hostname the name `ip` was resolved from, for the refusal reason. */
  checkAddress(ip: string, hostname?: string): CheckResult {
    const addr = parse(ip);
    if (!addr)
      return {
        ok: false,
        reason: refusal(ip, { allowed: false, range: 'invalid' }, hostname, this.#publicOnly),
      };
    if (this.#allowed(addr)) return { ok: true };
    const cls = classifyParsed(addr, this.#nat64);
    return cls.allowed ? { ok: true } : { ok: false, reason: refusal(ip, cls, hostname, this.#publicOnly) };
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
   * this host's network. An IPv6 entry in a NAT64 prefix does (64:ff9b::a00:0/104 for 10.0.0.0/8).
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

/** An address written out in full (no "10.1", hex or octal IPv4 forms): in a setting, a typo would widen it. */
export const isFullAddress = (address: string): boolean =>
  ipaddr.IPv4.isValidFourPartDecimal(address) || ipaddr.IPv6.isValid(address);

function parseAllowEntry(entry: string): [Addr, number] {
  const text = entry.trim();
  const [address = '', prefix] = text.split('/', 2);
  const strict = isFullAddress(address);
  if (strict && prefix === undefined) {
    const addr = ipaddr.parse(address);
    return [addr, addr.kind() === 'ipv4' ? 32 : 128];
  }
  if (strict && ipaddr.isValidCIDR(text)) return ipaddr.parseCIDR(text);
  throw new GuardSettingError(
    ALLOW_ENV,
    `"${entry}" is not a valid CIDR (expected e.g. 10.0.0.0/8, 127.0.0.1 or fd00::/8)`,
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
