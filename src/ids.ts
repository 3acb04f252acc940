import { randomFillSync } from 'node:crypto';
import { decodeTime, encodeTime, isValid, monotonicFactory } from 'ulid';

/**
 * Svix-style ids: a type prefix, `_`, and a ULID. The ULID starts with the creation time, so ids
 * sort by creation and pagination can use the id itself as the iterator.
 */
export const ID_PREFIXES = ['app', 'ep', 'msg', 'atmpt', 'msgep', 'evtype', 'qtask', 'opev'] as const;
export type IdPrefix = (typeof ID_PREFIXES)[number];

// ulid's default source asks the operating system for one byte per character (16 calls per id,
// a measurable share of a busy worker's time); this draws the same bytes 4 KiB at a time.
const pool = new Uint8Array(4096);
let poolAt = pool.length;
function randomFraction(): number {
  if (poolAt === pool.length) {
    randomFillSync(pool);
    poolAt = 0;
  }
  return pool[poolAt++]! / 256;
}

// One process-wide factory: ids made in the same millisecond still sort in creation order, and
// if `now` goes backwards the factory keeps the last time, so ids never sort before earlier ones.
const nextUlid = monotonicFactory(randomFraction);

/** `now` is the injected clock's time in ms (ulid would fall back to Date.now for 0, so it is refused). */
export function newId(prefix: IdPrefix, now: number): string {
  if (!Number.isSafeInteger(now) || now <= 0) {
    throw new RangeError('now must be a positive integer number of milliseconds');
  }
  return `${prefix}_${nextUlid(now)}`;
}

export function hasIdPrefix(value: string, prefix: IdPrefix): boolean {
  return value.startsWith(`${prefix}_`);
}

const UID = /^[a-zA-Z0-9\-_.]{1,256}$/;

/**
 * A user-chosen uid. It may not look like an id, so a path segment is never ambiguous, nor be
 * `.` or `..`, which HTTP clients resolve away (`/app/..` would be sent as `/`).
 */
export function isValidUid(value: string): boolean {
  return (
    UID.test(value) &&
    value !== '.' &&
    value !== '..' &&
    !ID_PREFIXES.some((prefix) => hasIdPrefix(value, prefix))
  );
}

/** The creation time (ms) encoded in an id made by newId. */
export function idTime(id: string): number {
  const separator = id.indexOf('_');
  const ulid = id.slice(separator + 1);
  if (separator < 1 || !isValid(ulid)) throw new RangeError(`not a prefixed ULID id: ${id}`);
  return decodeTime(ulid);
}

/**
 * The bound below which every id of this prefix was made before `time` (ms): the ULID's time
 * prefix alone, so an id made at `time` itself (longer, same prefix) sorts after it.
 */
export function idsBefore(prefix: IdPrefix, time: number): string {
  if (!Number.isSafeInteger(time) || time < 0) throw new RangeError('time must be a non-negative integer');
  return `${prefix}_${encodeTime(time, 10)}`;
}
