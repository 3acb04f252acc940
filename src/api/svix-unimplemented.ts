/**
 * Parts of Svix's API v1 that Courier does not serve. A call to one answers 501
 * `not_implemented`, as svix-server does for what it leaves out, rather than a 404 that a caller
 * would read as "that application or endpoint does not exist".
 */
const ID = '[^/]+';

const UNIMPLEMENTED: readonly { path: RegExp; what: string }[] = [
  { path: /^\/api\/v1\/stream(\/|$)/, what: 'streams' },
  { path: /^\/api\/v1\/connector(\/|$)/, what: 'connectors' },
  { path: /^\/api\/v1\/auth\/(stream-portal-access|stream-logout|stream)(\/|$)/, what: 'streams' },
  { path: new RegExp(`^/api/v1/app/${ID}/(integration|poller)(/|$)`), what: 'integrations and pollers' },
  { path: new RegExp(`^/api/v1/app/${ID}/endpoint/${ID}/transformation$`), what: 'transformations' },
];

/** What of Svix's API this path belongs to, when Courier does not serve it. */
export function unimplementedSvixFeature(path: string): string | null {
  return UNIMPLEMENTED.find((u) => u.path.test(path))?.what ?? null;
}
