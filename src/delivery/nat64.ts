/**
 * NAT64 prefixes (RFC 6052): an IPv6 address within one stands for the IPv4 address it carries,
 * which a NAT64 gateway connects to. The SSRF guard judges such an address by that IPv4 address.
 */
import ipaddr from 'ipaddr.js';

export const NAT64_ENV = 'COURIER_NAT64_PREFIXES';

export interface Nat64Prefix {
  readonly network: ipaddr.IPv6;
  readonly length: number;
  /** Canonical `address/length`, as refusals name it. */
  readonly text: string;
}

const LENGTHS = [32, 40, 48, 56, 64, 96];
/**
 * Where a named prefix may be (ipaddr.js's ranges): its addresses are judged by the IPv4 address
 * they carry instead of by their own range, so one in a link-local, multicast, 6to4, Teredo or
 * ::/96 range would open addresses of that range.
 */
const PREFIX_RANGES = ['unicast', 'uniqueLocal', 'rfc6052', 'reserved'];

/** A mistake in a setting that widens or narrows what deliveries may reach: start-up stops on it. */
export class GuardSettingError extends Error {
  constructor(
    readonly setting: string,
    readonly detail: string,
  ) {
    super(`${setting}: ${detail}`);
    this.name = 'GuardSettingError';
  }
}

function prefix(network: ipaddr.IPv6, length: number): Nat64Prefix {
  return { network, length, text: `${network.toString()}/${length}` };
}

function overlaps(a: Nat64Prefix, b: Nat64Prefix): boolean {
  return a.network.match(b.network, b.length) || b.network.match(a.network, a.length);
}

/** Always decoded: DNS64's default, and what an IPv6-only host's resolver answers without a setting. */
export const WELL_KNOWN_NAT64 = prefix(ipaddr.IPv6.parse('64:ff9b::'), 96);

function parsePrefix(entry: string): Nat64Prefix {
  const text = entry.trim();
  const [address = '', length, extra] = text.split('/');
  const bits = Number(length);
  if (
    !ipaddr.IPv6.isValid(address) ||
    address.includes('%') ||
    extra !== undefined ||
    !/^\d+$/.test(length ?? '')
  ) {
    throw new GuardSettingError(
      NAT64_ENV,
      `"${entry}" is not an IPv6 prefix (expected e.g. 64:ff9b:1:fffe::/96)`,
    );
  }
  if (!LENGTHS.includes(bits)) {
    throw new GuardSettingError(
      NAT64_ENV,
      `"${entry}" is /${bits} long; a NAT64 prefix is /32, /40, /48, /56, /64 or /96 (RFC 6052)`,
    );
  }
  const network = ipaddr.IPv6.networkAddressFromCIDR(`${address}/${bits}`);
  const parsed = prefix(network, bits);
  // A typo in the address part would otherwise decode the wrong bits of every address in it.
  if (network.toNormalizedString() !== ipaddr.IPv6.parse(address).toNormalizedString()) {
    throw new GuardSettingError(
      NAT64_ENV,
      `"${entry}" has bits set past its length; did you mean ${parsed.text}?`,
    );
  }
  if (!PREFIX_RANGES.includes(network.range())) {
    throw new GuardSettingError(
      NAT64_ENV,
      `"${entry}" is in the special-purpose range "${network.range()}", where no NAT64 prefix is`,
    );
  }
  return parsed;
}

/**
 * The network-specific prefixes of a setting. One that overlaps another, or the well-known prefix,
 * would read two IPv4 addresses out of one IPv6 address: refused rather than guessed at.
 */
export function parseNat64Prefixes(entries: readonly string[]): Nat64Prefix[] {
  const prefixes: Nat64Prefix[] = [];
  for (const entry of entries) {
    const parsed = parsePrefix(entry);
    const clash = [WELL_KNOWN_NAT64, ...prefixes].find((other) => overlaps(parsed, other));
    if (clash) throw new GuardSettingError(NAT64_ENV, `"${entry}" ${clashing(parsed, clash)}`);
    prefixes.push(parsed);
  }
  return prefixes;
}

function clashing(parsed: Nat64Prefix, clash: Nat64Prefix): string {
  if (clash === WELL_KNOWN_NAT64) {
    return parsed.text === clash.text
      ? 'is the well-known prefix, always decoded'
      : `overlaps the well-known prefix ${clash.text}, which is always decoded`;
  }
  return parsed.text === clash.text ? 'is named twice' : `overlaps ${clash.text}`;
}

/**
 * The IPv4 address carried by an address within `nat64`: the 32 bits after the prefix, passing
 * over bits 64–71 (RFC 6052 §2.2). Undefined outside the prefix; null within it where bits 64–71
 * or the suffix after the IPv4 address are set, which RFC 6052 keeps zero: that is no form of an
 * IPv4 address (an interface identifier read so would pass for a public one).
 */
export function carriedIPv4(addr: ipaddr.IPv6, nat64: Nat64Prefix): ipaddr.IPv4 | null | undefined {
  if (!addr.match(nat64.network, nat64.length)) return undefined;
  const bytes = addr.toByteArray();
  let i = nat64.length / 8;
  const v4: number[] = [];
  for (; v4.length < 4; i++) if (i !== 8) v4.push(bytes[i]!);
  // In a /96 prefix, bits 64–71 are the prefix's own, and nothing follows the IPv4 address.
  const reservedZero =
    nat64.length === 96 || [bytes[8], ...bytes.slice(Math.max(i, 9))].every((b) => b === 0);
  return reservedZero ? new ipaddr.IPv4(v4) : null;
}
