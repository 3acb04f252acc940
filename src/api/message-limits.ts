/**
 * What a published message may carry, shared by the API's schemas and `courier send`, which checks
 * the same before sending (a plain module: the CLI does not load the schema library).
 */

/** A channel: 1-128 of letters, digits and - _ . : */
export const CHANNEL_PATTERN = '^[a-zA-Z0-9\\-_.:]{1,128}$';
/** A tag: 1-128 of letters, digits and - _ . / \ # */
export const TAG_PATTERN = '^[a-zA-Z0-9\\-_./\\\\#]{1,128}$';
/** At most this many channels, and as many tags, on one message. */
export const MESSAGE_NAMES_MAX = 10;
/** payloadRetentionHours' bounds: an hour to 90 days. */
export const PAYLOAD_RETENTION_HOURS = { min: 1, max: 2160 } as const;
