/**
 * Human durations for logs, docs and configuration: '250ms', '90s', '4m30s', '1.5h', '3d'.
 * formatDuration writes what parseDuration reads, so every whole-millisecond value round-trips.
 */

const UNITS = [
  ['d', 86_400_000],
  ['h', 3_600_000],
  ['m', 60_000],
  ['s', 1_000],
  ['ms', 1],
] as const;
type Unit = (typeof UNITS)[number][0];
const UNIT_MS: Readonly<Record<Unit, number>> = Object.fromEntries(UNITS) as Record<Unit, number>;

// 'ms' precedes 'm' and 's' so that '250ms' is not read as 250 minutes followed by a stray 's'.
const WHOLE = /^(?:\d+(?:\.\d+)?(?:ms|s|m|h|d))+$/;
const SEGMENT = /(\d+)(?:\.(\d+))?(ms|s|m|h|d)/g;
const EXPECTED = 'expected numbers with units (ms, s, m, h, d), e.g. "90s", "1.5h" or "4m30s"';

/** Formats whole milliseconds as compound units, largest first: 270000 → '4m30s', 0 → '0s'. */
export function formatDuration(ms: number): string {
  if (!Number.isSafeInteger(ms) || ms < 0) {
    throw new RangeError(`formatDuration needs a whole, non-negative number of milliseconds, got ${ms}`);
  }
  if (ms === 0) return '0s';
  let rest = ms;
  let text = '';
  for (const [unit, size] of UNITS) {
    const count = Math.floor(rest / size);
    if (count > 0) text += `${count}${unit}`;
    rest -= count * size;
  }
  return text;
}

/** Parses '90s', '1.5h', '4m30s' … into whole milliseconds; throws an Error saying what is wrong. */
export function parseDuration(text: string): number {
  if (typeof text !== 'string') throw new TypeError(`a duration must be a string, got ${typeof text}`);
  const trimmed = text.trim();
  if (!WHOLE.test(trimmed)) throw new Error(`invalid duration ${JSON.stringify(text)}: ${diagnose(trimmed)}`);
  // BigInt keeps fractions exact: '1.1s' is 1100 ms, not 1100.0000000000002.
  let total = 0n;
  for (const [, whole, fraction = '', unit] of trimmed.matchAll(SEGMENT)) {
    const scale = 10n ** BigInt(fraction.length);
    const scaled = BigInt(whole + fraction) * BigInt(UNIT_MS[unit as Unit]);
    if (scaled % scale !== 0n) {
      throw new Error(`invalid duration ${JSON.stringify(text)}: not a whole number of milliseconds`);
    }
    total += scaled / scale;
  }
  if (total > BigInt(Number.MAX_SAFE_INTEGER)) {
    throw new RangeError(`invalid duration ${JSON.stringify(text)}: too large`);
  }
  return Number(total);
}

function diagnose(trimmed: string): string {
  if (trimmed === '') return `empty; ${EXPECTED}`;
  if (trimmed.startsWith('-')) return 'durations cannot be negative';
  if (/^\d+(?:\.\d+)?$/.test(trimmed)) return `missing unit; ${EXPECTED}`;
  return EXPECTED;
}
