/**
 * A string that a JSON Schema `pattern` (an ECMA-262 regular expression, searched, not anchored)
 * matches, for the example maker. Built from the pattern's syntax, never by running it: a stored
 * pattern is user input, and matching one can take exponential time. The subset: literals and
 * escapes, `.`, classes (ranges, negation, \d \w \s and their negations), groups (capturing,
 * non-capturing, named), alternation, the quantifiers `* + ? {n} {n,} {n,m}` (lazy too), and `^`
 * and `$` at the pattern's ends. Anything else (lookaround, back-references, \b, \p{…}, an anchor
 * elsewhere) gives undefined, as does a length the pattern cannot meet within [min, max].
 */

type Node =
  | { kind: 'text'; text: string }
  | { kind: 'alt'; options: Node[][] }
  | { kind: 'repeat'; node: Node; min: number; max: number };

class Unsupported extends Error {}

/** Groups within groups: far beyond a real pattern, short of the stack. */
const MAX_GROUP_DEPTH = 64;

/** Characters tried, in order, for a negated class or escape: something ordinary first. */
const CANDIDATES = 'aA0x_- .~';
const CLASS_ESCAPES: Record<string, (c: string) => boolean> = {
  d: (c) => c >= '0' && c <= '9',
  w: (c) => /[A-Za-z0-9_]/.test(c),
  s: (c) => c === ' ',
};
const CONTROL_ESCAPES: Record<string, string> = { t: '\t', n: '\n', r: '\r', f: '\f', v: '\v', '0': '\0' };

function parse(whole: string, limit: number) {
  const anchoredStart = whole.startsWith('^');
  // A final `$` that is not escaped (an odd run of backslashes before it escapes it).
  const anchoredEnd = /(^|[^\\])(\\\\)*\$$/.test(whole);
  const pattern = whole.slice(anchoredStart ? 1 : 0, anchoredEnd ? -1 : undefined);
  let i = 0;
  let depth = 0;
  /**
   * Characters of the Basic Multilingual Plane only: with `u` a surrogate pair is one character,
   * and JSON Schema counts lengths in code points, which are then UTF-16 units.
   */
  const bmp = (c: string): string => (c.length === 1 && (c < '\uD800' || c > '\uDFFF') ? c : fail());
  const peek = () => pattern[i];
  const fail = (): never => {
    throw new Unsupported();
  };

  /** One character of an escape (after the backslash), or a predicate for a class escape. */
  function escaped(): string | ((c: string) => boolean) {
    const c = pattern[i++] ?? fail();
    const lower = c.toLowerCase();
    if (lower in CLASS_ESCAPES) {
      const test = CLASS_ESCAPES[lower]!;
      return c === lower ? test : (x) => !test(x);
    }
    // \0 before a digit is an octal escape or a back-reference.
    if (c in CONTROL_ESCAPES && (c !== '0' || !/[0-9]/.test(pattern[i] ?? ''))) return CONTROL_ESCAPES[c]!;
    const hex = (n: number) => {
      const digits = pattern.slice(i, i + n);
      if (!new RegExp(`^[0-9A-Fa-f]{${n}}$`).test(digits)) fail();
      i += n;
      return bmp(String.fromCodePoint(Number.parseInt(digits, 16)));
    };
    if (c === 'x') return hex(2);
    if (c === 'u') {
      if (peek() !== '{') return hex(4);
      const end = pattern.indexOf('}', i);
      const digits = end < 0 ? '' : pattern.slice(i + 1, end);
      if (!/^[0-9A-Fa-f]{1,6}$/.test(digits) || Number.parseInt(digits, 16) > 0x10ffff) fail();
      i = end + 1;
      return bmp(String.fromCodePoint(Number.parseInt(digits, 16)));
    }
    // Back-references, word boundaries, property escapes, control letters: not this subset.
    if (/[0-9A-Za-z]/.test(c)) fail();
    return c;
  }

  /** A class's first member, or for a negated one the first candidate it leaves out. */
  function charClass(): string {
    const negated = peek() === '^';
    if (negated) i++;
    const members: ((c: string) => boolean)[] = [];
    let first: string | undefined;
    while (peek() !== ']') {
      if (i >= pattern.length) fail();
      const start = pattern[i++] === '\\' ? escaped() : bmp(pattern[i - 1]!);
      if (typeof start !== 'string') {
        members.push(start);
        first ??= [...CANDIDATES].find(start);
        continue;
      }
      if (peek() === '-' && pattern[i + 1] !== ']' && i + 1 < pattern.length) {
        i++;
        const end = pattern[i++] === '\\' ? escaped() : bmp(pattern[i - 1]!);
        if (typeof end !== 'string' || end < start) fail();
        members.push((c) => c >= start && c <= (end as string));
      } else members.push((c) => c === start);
      first ??= start;
    }
    i++;
    const chosen = negated ? [...CANDIDATES].find((c) => !members.some((m) => m(c))) : first;
    return chosen ?? fail();
  }

  function atom(): Node {
    const c = pattern[i++]!;
    if (c === '(') {
      if (++depth > MAX_GROUP_DEPTH) fail();
      if (pattern.startsWith('?:', i)) i += 2;
      else if (pattern[i] === '?') {
        const named = /^\?<([A-Za-z_$][\w$]*)>/.exec(pattern.slice(i));
        if (!named) fail(); // lookahead and lookbehind
        i += named![0].length;
      }
      const node = alternation();
      if (pattern[i++] !== ')') fail();
      depth--;
      return node;
    }
    if (c === '[') return { kind: 'text', text: charClass() };
    if (c === '.') return { kind: 'text', text: 'a' };
    if (c === '\\') {
      const e = escaped();
      return { kind: 'text', text: typeof e === 'string' ? e : ([...CANDIDATES].find(e) ?? fail()) };
    }
    if ('^$*+?{})]|'.includes(c)) fail();
    return { kind: 'text', text: bmp(c) };
  }

  function quantified(node: Node): Node {
    const c = peek();
    let bounds: [number, number] | undefined;
    if (c === '*') bounds = [0, Number.POSITIVE_INFINITY];
    else if (c === '+') bounds = [1, Number.POSITIVE_INFINITY];
    else if (c === '?') bounds = [0, 1];
    if (bounds) i++;
    else if (c === '{') {
      const m = /^\{(\d+)(,(\d*))?\}/.exec(pattern.slice(i));
      if (!m) fail();
      i += m![0].length;
      const min = Number(m![1]);
      bounds = [min, m![2] === undefined ? min : m![3] === '' ? Number.POSITIVE_INFINITY : Number(m![3])];
      if (bounds[1] < min || min > limit) fail();
    }
    if (!bounds) return node;
    if (peek() === '?') i++; // lazy: the same strings match
    return { kind: 'repeat', node, min: bounds[0], max: bounds[1] };
  }

  function sequence(): Node[] {
    const items: Node[] = [];
    while (i < pattern.length && peek() !== '|' && peek() !== ')') items.push(quantified(atom()));
    return items;
  }

  function alternation(): Extract<Node, { kind: 'alt' }> {
    const options = [sequence()];
    while (peek() === '|') {
      i++;
      options.push(sequence());
    }
    return { kind: 'alt', options };
  }

  const top = alternation();
  if (i < pattern.length) fail(); // a stray `)`
  // `^a|b$` anchors each end's alternative only: not this subset.
  if (top.kind === 'alt' && top.options.length > 1 && (anchoredStart || anchoredEnd)) fail();
  return {
    top: top.kind === 'alt' && top.options.length === 1 ? top.options[0]! : [top],
    anchoredStart,
    anchoredEnd,
  };
}

/** The shortest string each node gives (the first alternative that can be made). */
function shortest(node: Node, limit: number): string {
  if (node.kind === 'text') return node.text;
  if (node.kind === 'repeat') {
    const one = shortest(node.node, limit);
    if (one.length * node.min > limit) throw new Unsupported();
    return one.repeat(node.min);
  }
  for (const option of node.options) {
    try {
      return sequenceText(option, limit);
    } catch (error) {
      if (!(error instanceof Unsupported)) throw error;
    }
  }
  throw new Unsupported();
}

function sequenceText(items: Node[], limit: number): string {
  let text = '';
  for (const item of items) {
    text += shortest(item, limit);
    if (text.length > limit) throw new Unsupported();
  }
  return text;
}

/**
 * A string the pattern matches, of length within [min, max] (and at most `limit`), or undefined.
 * Short of min, an unanchored end is padded, else a top-level repeat is repeated more.
 */
export function stringFromPattern(
  pattern: string,
  min: number,
  max: number,
  limit: number,
): string | undefined {
  const cap = Math.min(max, limit);
  if (min > cap) return undefined;
  try {
    const { top, anchoredStart, anchoredEnd } = parse(pattern, cap);
    const parts: string[] = [];
    let length = 0;
    for (const item of top) {
      parts.push(shortest(item, cap));
      length += parts.at(-1)!.length;
      if (length > cap) return undefined;
    }
    // Both ends anchored: only more repetitions make it longer.
    for (const [k, item] of top.entries()) {
      if (length >= min || !(anchoredStart && anchoredEnd)) break;
      if (item.kind !== 'repeat') continue;
      const one = shortest(item.node, cap);
      if (one.length === 0) continue;
      const wanted = Math.ceil((min - length) / one.length);
      const more = Math.min(item.max - item.min, wanted, Math.floor((cap - length) / one.length));
      parts[k] += one.repeat(more);
      length += one.length * more;
    }
    let text = parts.join('');
    if (text.length < min) {
      if (!anchoredEnd) text = text.padEnd(min, 'x');
      else if (!anchoredStart) text = text.padStart(min, 'x');
    }
    return text.length >= min && text.length <= cap ? text : undefined;
  } catch (error) {
    if (error instanceof Unsupported) return undefined;
    throw error;
  }
}
