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
