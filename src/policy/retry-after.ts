/**
 * Retry-After (RFC 9110 §10.2.3): delta-seconds or an HTTP-date. A receiver that says when to come
 * back knows more than our backoff does. Parsing is strict and never throws: a header we cannot
 * read is treated as absent and the ordinary backoff applies.
 */
import type { ResponseHeaders } from './types.ts';

const WEEKDAYS = ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat'];
const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
const DAY = `(?<weekday>${WEEKDAYS.join('|')})`;
const LONG_DAY = '(?<weekday>Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday)';
const MONTH = `(?<month>${MONTHS.join('|')})`;
const TIME = '(?<hour>\\d{2}):(?<minute>\\d{2}):(?<second>\\d{2})';

/** The three forms RFC 9110 §5.6.7 says recipients MUST accept; names are case-sensitive there. */
const HTTP_DATE_FORMATS = [
  // IMF-fixdate: Sun, 06 Nov 1994 08:49:37 GMT
  new RegExp(`^${DAY}, (?<day>\\d{2}) ${MONTH} (?<year>\\d{4}) ${TIME} GMT$`),
  // obsolete RFC 850: Sunday, 06-Nov-94 08:49:37 GMT
  new RegExp(`^${LONG_DAY}, (?<day>\\d{2})-${MONTH}-(?<year>\\d{2}) ${TIME} GMT$`),
  // obsolete asctime: Sun Nov  6 08:49:37 1994
  new RegExp(`^${DAY} ${MONTH} (?<day>\\d{2}| \\d) ${TIME} (?<year>\\d{4})$`),
];
/** Whole seconds, so the delay stays a safe integer of milliseconds. */
const MAX_DELTA_SECONDS = Math.floor(Number.MAX_SAFE_INTEGER / 1000);

type DateField = 'weekday' | 'day' | 'month' | 'year' | 'hour' | 'minute' | 'second';

/**
 * The delay (ms ≥ 0) a Retry-After value asks for, or undefined when absent or unusable.
 * A repeated header yields its first usable value; a date in the past means "now" (0).
 */
export function parseRetryAfter(
  value: string | readonly string[] | undefined,
  now: number,
): number | undefined {
  const values = typeof value === 'string' ? [value] : (value ?? []);
  for (const candidate of values) {
    const delay = parseOne(candidate, now);
    if (delay !== undefined) return delay;
  }
  return undefined;
}

/** A header's value by case-insensitive name (HTTP field names are case-insensitive). */
export function findHeader(
  headers: ResponseHeaders | undefined,
  name: string,
): string | readonly string[] | undefined {
  const wanted = name.toLowerCase();
  for (const [key, value] of Object.entries(headers ?? {})) {
    if (value !== undefined && key.toLowerCase() === wanted) return value;
  }
  return undefined;
}

/** parseRetryAfter applied to the Retry-After header of a response. */
export function retryAfterFromHeaders(headers: ResponseHeaders | undefined, now: number): number | undefined {
  return parseRetryAfter(findHeader(headers, 'retry-after'), now);
}

function parseOne(raw: unknown, now: number): number | undefined {
  if (typeof raw !== 'string') return undefined;
  const text = raw.replace(/^[ \t]+|[ \t]+$/g, ''); // optional whitespace (OWS) is spaces and tabs
  // delta-seconds is 1*DIGIT. However long, it asks for at least as long as any other value: the
  // policy's ceiling, not this parser, decides how much of it to honour. Two forms outside the
  // grammar are read too, as ignoring them would bring us back sooner than asked: a fraction
  // (`3600.0`), rounded up, and repeated headers a proxy joined with commas (`120, 120`), the first.
  const seconds = /^(\d+)(?:\.(\d+))?(?:[ \t]*,[ \t]*\d+(?:\.\d+)?)*$/.exec(text);
  const delay = seconds
    ? Math.min(Number(seconds[1]) + (/[1-9]/.test(seconds[2] ?? '') ? 1 : 0), MAX_DELTA_SECONDS) * 1000
    : Math.max(0, httpDate(text, now) - now);
  return Number.isNaN(delay) ? undefined : delay;
}

/** The instant an HTTP-date names, or NaN when it is not a valid date in one of the three forms. */
function httpDate(text: string, now: number): number {
  for (const format of HTTP_DATE_FORMATS) {
    const fields = format.exec(text)?.groups as Readonly<Record<DateField, string>> | undefined;
    if (fields !== undefined) return toInstant(fields, now);
  }
  return Number.NaN;
}

function toInstant(fields: Readonly<Record<DateField, string>>, now: number): number {
  const year = fields.year.length === 2 ? expandTwoDigitYear(Number(fields.year), now) : Number(fields.year);
  const day = Number(fields.day);
  const [hour, minute, second] = [Number(fields.hour), Number(fields.minute), Number(fields.second)];
  // setUTCFullYear, not Date.UTC: Date.UTC maps years 0–99 to 1900–1999.
  const date = new Date(0);
  date.setUTCFullYear(year, MONTHS.indexOf(fields.month), day);
  // Out-of-range days roll into the next month, so a changed day-of-month means "no such date".
  if (date.getUTCDate() !== day) return Number.NaN;
  if (date.getUTCDay() !== WEEKDAYS.indexOf(fields.weekday.slice(0, 3))) return Number.NaN;
  if (hour > 23 || minute > 59 || second > 60) return Number.NaN; // :60 is a leap second
  return date.getTime() + ((hour * 60 + minute) * 60 + second) * 1000;
}

/**
 * RFC 9110: a two-digit year that appears more than 50 years in the future is in the past century.
 * So the year is the one with those digits within 50 years of now ('00' read in 2099 is 2100).
 */
function expandTwoDigitYear(twoDigits: number, now: number): number {
  const currentYear = new Date(now).getUTCFullYear();
  const year = currentYear - (currentYear % 100) + twoDigits;
  if (year > currentYear + 50) return year - 100;
  return year <= currentYear - 50 ? year + 100 : year;
}
