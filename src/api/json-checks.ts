/**
 * What Courier refuses in JSON it is given, beyond what JSON.parse refuses, for the API (a 400
 * `invalid_json`) and the CLI (exit 2) alike: what the rest of Courier cannot hold (RFC 7493, I-JSON).
 * (The API also refuses bytes that are not UTF-8: they would be decoded to U+FFFD and stored changed.)
 *  - a lone UTF-16 surrogate (`"\ud800"`) cannot be encoded in UTF-8 either: PostgreSQL text
 *    would get U+FFFD instead;
 *  - nesting deeper than MAX_JSON_DEPTH overflows the stack of the recursive code a body meets
 *    later (JSON.stringify, the idempotency fingerprint, PostgreSQL's jsonb parser): a 500;
 *  - a number beyond a double's range (`1e400`) parses as Infinity, which JSON.stringify writes as
 *    null: a payload would reach its receivers changed (serde_json, and so Svix, refuses it too);
 *  - a number a double cannot hold exactly (a 64-bit id such as 1234567890123456789, 1e-400,
 *    0.10000000000000000001) would reach them as another number: send such values as strings;
 *    one written longer than any double needs (MAX_NUMBER_LITERAL) is refused too.
 */

/** As serde_json (and so Svix) allows: a body nests at most this many arrays and objects. */
export const MAX_JSON_DEPTH = 128;

// With the u flag a surrogate class only matches surrogates that are not part of a pair.
const LONE_SURROGATE = /[\uD800-\uDFFF]/u;

/** Why the parsed value cannot be taken (walked without recursion), or null. */
export function jsonProblem(value: unknown, maxDepth = MAX_JSON_DEPTH): string | null {
  const stack: [unknown, number][] = [[value, 0]];
  while (stack.length > 0) {
    const [v, depth] = stack.pop()!;
    if (typeof v === 'string') {
      if (LONE_SURROGATE.test(v))
        return 'Body contains a lone UTF-16 surrogate (\\uD800-\\uDFFF) in a string';
    } else if (typeof v === 'number') {
      if (!Number.isFinite(v)) return 'Body contains a number out of range (beyond ±1.8e308)';
    } else if (v !== null && typeof v === 'object') {
      if (depth >= maxDepth) return `Body is nested deeper than ${maxDepth} levels`;
      if (Array.isArray(v)) {
        for (const item of v) stack.push([item, depth + 1]);
      } else {
        for (const [key, item] of Object.entries(v)) {
          if (LONE_SURROGATE.test(key))
            return 'Body contains a lone UTF-16 surrogate (\\uD800-\\uDFFF) in a key';
          stack.push([item, depth + 1]);
        }
      }
    }
  }
  return null;
}

// A literal whose value a double may not keep: 16 or more digits (a decimal point may split them)
// or an exponent below -99.
const MAYBE_INEXACT = /\d[\d.]{15}|[eE]-0*[1-9]\d{2}/;
// Strings (unrolled, so a long one does not recurse) are matched and skipped, so digits inside
// them are never read as numbers; then only the number literals MAYBE_INEXACT could hold.
const STRING_OR_SUSPECT =
  /"[^"\\]*(?:\\.[^"\\]*)*"|-?(?:(?=[\d.]{16})\d+(?:\.\d+)?(?:[eE][+-]?\d+)?|\d+(?:\.\d+)?[eE]-0*[1-9]\d{2,})/g;
const NUMBER = /^-?(\d+)(?:\.(\d+))?(?:[eE]([+-]?\d+))?$/;

/**
 * No double needs a longer literal (309 integer digits, or 1,074 fraction digits and 17 more for
 * the smallest): one longer is refused unread, which also bounds the work on each.
 */
export const MAX_NUMBER_LITERAL = 1_500;

/**
 * A number literal of `text` whose value the parsed double does not hold exactly, or that is longer
 * than MAX_NUMBER_LITERAL, or null.
 */
export function inexactNumber(text: string): string | null {
  if (!MAYBE_INEXACT.test(text)) return null;
  for (const [literal] of text.matchAll(STRING_OR_SUSPECT)) {
    if (literal.startsWith('"')) continue;
    if (literal.length > MAX_NUMBER_LITERAL || !heldExactly(literal)) return literal;
  }
  return null;
}

/**
 * Whether the double a literal parses to is the literal's value: an integer printed back the same
 * (1152921504606847000 is; 1234567890123456789 comes back …800, another integer to a receiver that
 * reads big integers), or a decimal that is the double correctly rounded to the literal's digits
 * (so the 17 digits of 0.10000000000000001 pass, being 0.1 as printed with %.17g).
 */
function heldExactly(literal: string): boolean {
  const written = spelled(literal);
  if (written.digits === '') return true; // zero, however written
  const value = Math.abs(Number(literal));
  if (value === 0) return false; // below the smallest double
  const integer = /^-?\d+$/.test(literal);
  const held = spelled(integer ? String(value) : value.toPrecision(Math.min(written.digits.length, 100)));
  return held.digits === written.digits && held.exponent === written.exponent;
}

/** A number's spelling (a JSON literal, or what String and toPrecision write) as a decimal. */
function spelled(text: string): { digits: string; exponent: number } {
  const [, whole = '', fraction = '', exponent = '0'] = NUMBER.exec(text.replace('e+', 'e')) ?? [];
  return decimal(whole + fraction, Number(exponent) - fraction.length);
}

/** digits × 10^exponent with no leading or trailing zeros in digits ('' for zero). */
function decimal(digits: string, exponent: number): { digits: string; exponent: number } {
  const significant = digits.replace(/^0+/, '');
  // A loop, not /0+$/: the regex tries every zero run to its end, quadratic in a run ending in a 1.
  let end = significant.length;
  while (end > 0 && significant.charCodeAt(end - 1) === 48) end--;
  return { digits: significant.slice(0, end), exponent: exponent + significant.length - end };
}

/** What JSON.parse read from text that Courier refuses to pass on (the API's 400, the CLI's exit 2). */
export function parsedJsonProblem(text: string, value: unknown): string | null {
  const problem = jsonProblem(value);
  if (problem) return problem;
  const inexact = inexactNumber(text);
  if (inexact === null) return null;
  if (inexact.length > MAX_NUMBER_LITERAL)
    return `Body contains a number written with ${inexact.length} characters (at most ${MAX_NUMBER_LITERAL})`;
  const shown = inexact.length > 40 ? `${inexact.slice(0, 40)}…` : inexact;
  return (
    `Body contains the number ${shown}, which would reach receivers changed: JSON numbers are ` +
    'held as 64-bit floating point (exact integers up to 2^53); send it as a string'
  );
}
