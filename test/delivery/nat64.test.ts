// Strings only: nothing here opens a connection.
import ipaddr from 'ipaddr.js';
import { describe, expect, it } from 'vitest';
import { carriedIPv4, parseNat64Prefixes, WELL_KNOWN_NAT64 } from '../../src/delivery/nat64.ts';

describe('carriedIPv4', () => {
  // RFC 6052 §2.4's table: 192.0.2.33 under each prefix length.
  it.each([
    ['2001:db8::/32', '2001:db8:c000:221::'],
    ['2001:db8:100::/40', '2001:db8:1c0:2:21::'],
    ['2001:db8:122::/48', '2001:db8:122:c000:2:2100::'],
    ['2001:db8:122:300::/56', '2001:db8:122:3c0:0:221::'],
    ['2001:db8:122:344::/64', '2001:db8:122:344:c0:2:2100:0'],
    ['2001:db8:122:344::/96', '2001:db8:122:344::192.0.2.33'],
    ['64:ff9b::/96', '64:ff9b::192.0.2.33'],
  ])('reads 192.0.2.33 out of its form under %s', (prefix, address) => {
    const [nat64] = prefix === '64:ff9b::/96' ? [WELL_KNOWN_NAT64] : parseNat64Prefixes([prefix]);
    expect(carriedIPv4(ipaddr.IPv6.parse(address), nat64!)?.toString()).toBe('192.0.2.33');
  });

  it.each([
    ['2001:db8:122:344::/64', '2001:db8:122:344:ffa9:fea9:fe00:0'], // bits 64–71
    ['2001:db8:122:344::/64', '2001:db8:122:344:a9:fea9:fe00:1'], // the suffix
    ['2001:db8::/32', '2001:db8:a9fe:a9fe:0:0:0:1'],
    ['2001:db8::/32', '2001:db8:a9fe:a9fe:211:22ff:fe33:4455'], // an interface identifier
    ['2001:db8:100::/40', '2001:db8:1a9:fea9:1fe::'],
  ])('reads no IPv4 address under %s out of %s: bits RFC 6052 keeps zero are set', (prefix, address) => {
    const [nat64] = parseNat64Prefixes([prefix]);
    expect(carriedIPv4(ipaddr.IPv6.parse(address), nat64!)).toBeNull();
  });

  it('reads 169.254.169.254 out of the same forms with those bits zero', () => {
    const [slash64, slash32] = parseNat64Prefixes(['2001:db8:122:344::/64', '2001:db9::/32']);
    expect(carriedIPv4(ipaddr.IPv6.parse('2001:db8:122:344:a9:fea9:fe00:0'), slash64!)?.toString()).toBe(
      '169.254.169.254',
    );
    expect(carriedIPv4(ipaddr.IPv6.parse('2001:db9:a9fe:a9fe::'), slash32!)?.toString()).toBe(
      '169.254.169.254',
    );
  });

  it('reads nothing out of an address outside the prefix', () => {
    const [nat64] = parseNat64Prefixes(['2001:db8:122:344::/96']);
    expect(carriedIPv4(ipaddr.IPv6.parse('2001:db8:122:345::a9fe:a9fe'), nat64!)).toBeUndefined();
  });
});

describe('parseNat64Prefixes', () => {
  it('takes the lengths RFC 6052 allows, trimmed and in canonical form', () => {
    expect(
      parseNat64Prefixes([' 2001:DB8:0:0::/32 ', '64:ff9b:1:fffe::/96', '2a00:1450:64::/48']).map(
        (p) => p.text,
      ),
    ).toEqual(['2001:db8::/32', '64:ff9b:1:fffe::/96', '2a00:1450:64::/48']);
  });

  it.each([
    [
      '2001:db8::/33',
      '"2001:db8::/33" is /33 long; a NAT64 prefix is /32, /40, /48, /56, /64 or /96 (RFC 6052)',
    ],
    ['2001:db8::/128', '"2001:db8::/128" is /128 long'],
    ['2001:db8::', '"2001:db8::" is not an IPv6 prefix (expected e.g. 64:ff9b:1:fffe::/96)'],
    ['10.0.0.0/8', '"10.0.0.0/8" is not an IPv6 prefix'],
    ['not-a-prefix', '"not-a-prefix" is not an IPv6 prefix'],
    ['2001:db8::/96/1', '"2001:db8::/96/1" is not an IPv6 prefix'],
    ['2001:db8::/ 96', '"2001:db8::/ 96" is not an IPv6 prefix'],
    ['fe80::%eth0/64', '"fe80::%eth0/64" is not an IPv6 prefix'],
    ['2001:db8::1/96', '"2001:db8::1/96" has bits set past its length; did you mean 2001:db8::/96?'],
    ['64:ff9b::/32', '"64:ff9b::/32" overlaps the well-known prefix 64:ff9b::/96, which is always decoded'],
    ['64:ff9b::/64', '"64:ff9b::/64" overlaps the well-known prefix'],
    ['64:ff9b::/96', '"64:ff9b::/96" is the well-known prefix, always decoded'],
    // Named, a prefix's addresses are judged by what they carry instead of by their own range.
    ['::/96', '"::/96" is in the special-purpose range "unspecified", where no NAT64 prefix is'],
    ['::ffff:0:0/96', '"::ffff:0:0/96" is in the special-purpose range "ipv4Mapped"'],
    ['fe80::/64', '"fe80::/64" is in the special-purpose range "linkLocal"'],
    ['ff0e::/96', '"ff0e::/96" is in the special-purpose range "multicast"'],
    ['2002::/32', '"2002::/32" is in the special-purpose range "6to4"'],
    ['2001::/32', '"2001::/32" is in the special-purpose range "teredo"'],
  ])('refuses %j, naming the setting', (entry, message) => {
    expect(() => parseNat64Prefixes([entry])).toThrow(`COURIER_NAT64_PREFIXES: ${message}`);
  });

  it('refuses prefixes that overlap each other: one address would carry two IPv4 addresses', () => {
    expect(() => parseNat64Prefixes(['2001:db8::/32', '2001:db8:122:344::/96'])).toThrow(
      'COURIER_NAT64_PREFIXES: "2001:db8:122:344::/96" overlaps 2001:db8::/32',
    );
    expect(() => parseNat64Prefixes(['2001:db8::/32', '2001:DB8::/32'])).toThrow(
      'COURIER_NAT64_PREFIXES: "2001:DB8::/32" is named twice',
    );
  });
});
