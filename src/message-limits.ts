/**
 * What a published message may carry, shared by the API, the store and `courier send`, which checks
 * the same before sending (a plain module: the CLI does not load the schema library).
 */

/** An event type's name: 1-256 of letters, digits and - _ . */
export const EVENT_TYPE_PATTERN = '^[a-zA-Z0-9\\-_.]{1,256}$';
/** A channel: 1-128 of letters, digits and - _ . : */
export const CHANNEL_PATTERN = '^[a-zA-Z0-9\\-_.:]{1,128}$';
/** A tag: 1-128 of letters, digits and - _ . / \ # */
export const TAG_PATTERN = '^[a-zA-Z0-9\\-_./\\\\#]{1,128}$';
/**
 * The tag an example message carries (send-example), and no published one may: replay-missing
 * passes such messages by, so an endpoint that never had an example does not get another's.
 */
export const EXAMPLE_TAG = 'courier.example';
/** Why a published message may not carry EXAMPLE_TAG, in the API's refusal and the CLI's alike. */
export const EXAMPLE_TAG_RESERVED = `${EXAMPLE_TAG} is reserved for example messages (send-example)`;
/** At most this many channels, and as many tags, on one message. */
export const MESSAGE_NAMES_MAX = 10;
/** payloadRetentionHours' bounds: an hour to 90 days. */
export const PAYLOAD_RETENTION_HOURS = { min: 1, max: 2160 } as const;
