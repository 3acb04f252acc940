import { describe, expect, it } from 'vitest';
import { receiverHost } from '../../src/delivery/receiver-host.ts';

describe('the receiving host of a URL (the per-host cap counts by it)', () => {
  it.each([
    ['https://Hooks.Example.COM/in?x=1', 'hooks.example.com:443'],
    ['http://example.com/a', 'example.com:80'],
    ['http://example.com:80/a', 'example.com:80'],
    ['https://example.com:443/a', 'example.com:443'],
    ['https://example.com:0443/a', 'example.com:443'],
    ['http://example.com:8080', 'example.com:8080'],
    // The same name with a trailing dot is the same host to DNS.
    ['https://example.com./x', 'example.com:443'],
    // Another port, another host: http and https on one name are two servers to the cap.
    ['https://example.com:80/', 'example.com:80'],
    ['http://[::1]:9000/x', '[::1]:9000'],
    ['http://[0:0::1]/', '[::1]:80'],
    ['http://167772165/', '10.0.0.5:80'],
    ['https://bücher.de/', 'xn--bcher-kva.de:443'],
    // The WHATWG parser, which the sender uses, ends the host at a backslash: requests go to evil.example.
    ['https://evil.example\\@victim.example/', 'evil.example:443'],
  ])('%s → %s', (url, host) => {
    expect(receiverHost(url)).toBe(host);
  });

  it('is null for what does not parse', () => {
    expect(receiverHost('not a url')).toBeNull();
  });
});
