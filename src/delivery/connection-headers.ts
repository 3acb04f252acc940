/**
 * Hop-by-hop headers (RFC 9110 §7.6.1) and Expect describe the connection, which is the sender's:
 * undici refuses to send them, and a request it refuses cannot be delivered at all. The API refuses
 * them on endpoints; the sender drops any that reach it, as an intermediary must (RFC 9110 §7.6.1).
 */
export const CONNECTION_HEADERS: ReadonlySet<string> = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'te',
  'transfer-encoding',
  'upgrade',
  'expect',
]);
