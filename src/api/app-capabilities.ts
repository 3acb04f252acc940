/** Svix's app portal capabilities (AppPortalCapability): what an application's token may do. */
export const CAPABILITIES = [
  'ViewBase',
  'ViewEndpointSecret',
  'ManageEndpointSecret',
  'ManageTransformations',
  'CreateAttempts',
  'ManageEndpoint',
] as const;
export type Capability = (typeof CAPABILITIES)[number];

/** How long a token may last, in seconds (Svix's bounds): an hour to 7 days. */
export const MIN_EXPIRY_S = 3600;
export const MAX_EXPIRY_S = 7 * 24 * 3600;
