/** COURIER_TRUST_PROXY's entries, checked as Fastify's trustProxy (proxy-addr) will read them. */
import ipaddr from 'ipaddr.js';
import { isFullAddress } from './delivery/ssrf-guard.ts';

// proxy-addr's (Fastify's) names for ranges.
export const PROXY_RANGES = ['loopback', 'linklocal', 'uniquelocal'];

/** Whether Fastify's trustProxy (proxy-addr) takes the entry as meant; a typo would trust nothing, or too much. */
export function isProxyEntry(entry: string): boolean {
  if (PROXY_RANGES.includes(entry)) return true;
  const [address, bits, ...rest] = entry.split('/');
  if (rest.length > 0 || !isFullAddress(address!)) return false;
  if (bits === undefined) return true;
  if (!/^[0-9]{1,3}$/.test(bits)) return false;
  const prefix = Number(bits);
  // /0 would believe every client (proxy-addr refuses it at start); a mapped IPv4 range matches only from /96.
  const mapped = ipaddr.IPv6.isValid(address!) && ipaddr.IPv6.parse(address!).isIPv4MappedAddress();
  return prefix > (mapped ? 95 : 0) && prefix <= (ipaddr.IPv4.isIPv4(address!) ? 32 : 128);
}
