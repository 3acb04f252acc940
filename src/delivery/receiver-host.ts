/**
 * The receiving host a URL's requests go to, as the per-host in-flight cap counts it: the host
 * name as the WHATWG URL parser reads it (the parser of the API's check and of the sender: lower
 * case, punycode, IPv4 in its canonical form, a backslash ending the authority), without a
 * trailing dot, and the port, the scheme's default when none is given. Null when it does not parse.
 */
export function receiverHost(url: string): string | null {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return null;
  }
  const port = parsed.port || (parsed.protocol === 'https:' ? '443' : '80');
  return `${parsed.hostname.replace(/\.$/, '')}:${port}`;
}
