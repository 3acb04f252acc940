/**
 * The bounds of an application's and an endpoint's settings, shared by the API's schemas and the
 * CLI, which checks the same before sending (a plain module: the CLI does not load the schema
 * library).
 */
import { MESSAGE_NAMES_MAX } from './message-limits.ts';

/** rateLimit (throttleRate): requests per second at most. */
export const RATE_LIMIT_MAX = 1_000_000;
/** maxInFlight: concurrent requests at most. */
export const MAX_IN_FLIGHT_MAX = 10_000;
/** An endpoint's channels: as many as a message may carry. */
export const ENDPOINT_CHANNELS_MAX = MESSAGE_NAMES_MAX;
/** How long a rotated secret's predecessor keeps signing unless the rotation says otherwise. */
export const SECRET_GRACE_DEFAULT_S = 24 * 3600;
/** The longest grace period a rotation may give. */
export const SECRET_GRACE_MAX_S = 30 * 86_400;
