/** A message as `courier send` and `courier messages` show it. */
import { type Column, orDash, timestamp } from './format.ts';

/** Svix's four standings of a message at an endpoint, counted (EndpointStats, statusCounts). */
export interface StandingCounts {
  success: number;
  pending: number;
  sending: number;
  fail: number;
}

/** Svix's MessageOut, the fields shown; the last three are Courier extensions, absent elsewhere. */
export interface MessageOut {
  id: string;
  eventId: string | null;
  eventType: string;
  channels: string[] | null;
  tags: string[] | null;
  timestamp: string;
  expungedAt?: string | null;
  payloadExpiresAt?: string | null;
  /** Where it stands at its endpoints, one count per endpoint (list with with_status=true). */
  statusCounts?: StandingCounts;
}

/** What the message is: its ids, names and when it was published. */
export const MESSAGE_COLUMNS: readonly Column<MessageOut>[] = [
  { header: 'ID', value: (m) => m.id },
  { header: 'EVENT TYPE', value: (m) => m.eventType },
  { header: 'EVENT ID', value: (m) => m.eventId ?? '-' },
  { header: 'CHANNELS', value: (m) => m.channels?.join(',') ?? '-' },
  { header: 'TAGS', value: (m) => m.tags?.join(',') ?? '-' },
  { header: 'CREATED', value: (m) => timestamp(m.timestamp) },
];

/** Svix's statusText in the words the README and the CLI use (pending and sending as they are). */
export const standingWord = (statusText: string): string =>
  ({ success: 'delivered', fail: 'failed' })[statusText] ?? statusText;

/** `delivered 5, pending 0, sending 0, failed 1`. */
export const standingsText = (counts: StandingCounts): string =>
  (Object.keys(STANDING_HEADERS) as (keyof StandingCounts)[])
    .map((key) => `${standingWord(key)} ${counts[key]}`)
    .join(', ');

const STANDING_HEADERS = { success: 'DELIVERED', pending: 'PENDING', sending: 'SENDING', fail: 'FAILED' };

/** A count column per standing, `-` where the row has no counts (an older server sends none). */
export function standingColumns<T>(counts: (row: T) => StandingCounts | undefined): Column<T>[] {
  return (Object.keys(STANDING_HEADERS) as (keyof StandingCounts)[]).map((key) => ({
    header: STANDING_HEADERS[key],
    value: (row: T) => orDash(counts(row)?.[key]),
    align: 'right' as const,
  }));
}
