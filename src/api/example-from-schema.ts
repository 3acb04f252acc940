/**
 * A plausible value for a JSON Schema, for send-example when an event type's schema has no
 * examples: what the schema itself offers first (`const`, `examples`, OpenAPI's `example`,
 * `default`, `enum`), else a value made from its type and bounds (a string's `pattern` too,
 * string-from-pattern.ts), every property included.
 * Deterministic (the one time it needs is given). Schemas are stored user input: the work is
 * bounded (every keyword read or copied is counted) and so is the value made (its JSON size).
 */

import { stringFromPattern } from './string-from-pattern.ts';

type Schema = Record<string, unknown>;

export type MadeExample = { value: unknown } | { problem: string };

/** Nesting of the value made, and steps of work: far beyond any payload schema, short of a costly one. */
const MAX_DEPTH = 32;
const MAX_STEPS = 200_000;
/** References followed in a row without reaching a schema: a chain, or a cycle of `$ref`s alone. */
const MAX_REF_HOPS = 32;
/** allOf within allOf (through references too), folded before any value is made. */
const MAX_FOLD_DEPTH = 64;

/** Nothing to make here: a cycle, or a schema that admits no value this can build. */
const NONE = Symbol('none');

class Stop extends Error {}

const isSchema = (value: unknown): value is Schema =>
  value !== null && typeof value === 'object' && !Array.isArray(value);

/** `{ type: 'null' }`, an option that would make the value null. */
const onlyNull = (option: unknown): boolean => isSchema(option) && own(option, 'type') === 'null';

/** Own properties only: a schema's `__proto__` or `constructor` is a key like any other. */
const own = (object: object, key: string): unknown =>
  Object.hasOwn(object, key) ? (object as Record<string, unknown>)[key] : undefined;

/** Sets a key on a made value, `__proto__` included. */
function put(target: Record<string, unknown>, key: string, value: unknown): void {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
}

/** A number keyword, when it is a finite number. */
const finite = (schema: Schema, key: string): number | undefined => {
  const value = own(schema, key);
  return typeof value === 'number' && Number.isFinite(value) ? value : undefined;
};

export function exampleFromSchema(root: unknown, now: number, maxBytes: number): MadeExample {
  let steps = 0;
  let bytes = 0;
  const spend = (n: number) => {
    steps += n;
    if (steps > MAX_STEPS) throw new Stop('the schema takes too much work to make an example from');
  };
  /** Counts a value's JSON size into the example's; a literal is measured once per use. */
  const emit = <T>(value: T, size = JSON.stringify(value)?.length ?? 0): T => {
    bytes += size;
    if (bytes > maxBytes) throw new Stop(`the example made from the schema would exceed ${maxBytes} bytes`);
    return value;
  };
  const iso = new Date(now).toISOString();
  const STRING_FORMATS = new Map<string, string>([
    ['date-time', iso],
    ['date', iso.slice(0, 10)],
    ['time', iso.slice(11)],
    ['email', 'user@example.com'],
    ['idn-email', 'user@example.com'],
    ['hostname', 'example.com'],
    ['idn-hostname', 'example.com'],
    ['ipv4', '192.0.2.1'],
    ['ipv6', '2001:db8::1'],
    ['uri', 'https://example.com/'],
    ['uri-reference', 'https://example.com/'],
    ['iri', 'https://example.com/'],
    ['url', 'https://example.com/'],
    ['uuid', '00000000-0000-4000-8000-000000000000'],
    ['duration', 'PT1M'],
    ['byte', 'c3RyaW5n'],
    ['json-pointer', '/'],
    ['relative-json-pointer', '0'],
    ['uri-template', 'https://example.com/'],
    ['regex', '.*'],
  ]);

  /** The schema a local JSON pointer (`#` or `#/…`, RFC 6901) names, or NONE. */
  function resolve(ref: string): Schema | boolean | typeof NONE {
    if (ref !== '#' && !ref.startsWith('#/')) return NONE;
    let node: unknown = root;
    for (const raw of ref.slice(2).split('/')) {
      if (ref === '#') break;
      spend(1 + raw.length);
      let key: string;
      try {
        key = decodeURIComponent(raw);
      } catch {
        return NONE;
      }
      key = key.replaceAll('~1', '/').replaceAll('~0', '~');
      if (node === null || typeof node !== 'object') return NONE;
      node = own(node, key);
    }
    return isSchema(node) || typeof node === 'boolean' ? node : NONE;
  }

  /**
   * The schema with its `$ref` followed and its `allOf` folded in, as one flat schema; `refs`
   * are the references on the way here (one met again is a cycle). NONE for `false`, a cycle or a
   * reference to nothing.
   */
  function flatten(input: unknown, refs: Set<string>, nesting = 0): Schema | typeof NONE {
    spend(1);
    if (nesting > MAX_FOLD_DEPTH) throw new Stop('the schema nests allOf too deeply to make an example from');
    if (input === true) return {};
    if (!isSchema(input)) return NONE;
    let schema: Schema = input;
    for (let hops = 0; ; hops++) {
      const ref = own(schema, '$ref');
      if (typeof ref !== 'string') break;
      if (refs.has(ref) || hops >= MAX_REF_HOPS) return NONE;
      refs.add(ref);
      const target = resolve(ref);
      if (target === NONE || target === false) return NONE;
      // Draft 2019+ allows keywords beside $ref: both apply.
      const { $ref: _ref, ...siblings } = schema;
      spend(Object.keys(siblings).length);
      schema = target === true ? siblings : Object.keys(siblings).length ? merge(siblings, target) : target;
    }
    const parts = own(schema, 'allOf');
    if (!Array.isArray(parts)) return schema;
    spend(Object.keys(schema).length);
    const { allOf: _allOf, ...rest } = schema;
    let flat: Schema = rest;
    for (const part of parts) {
      spend(refs.size);
      const folded = flatten(part, new Set(refs), nesting + 1);
      if (folded === NONE) return NONE;
      flat = merge(flat, folded);
    }
    return flat;
  }

  /** Both schemas at once, roughly: properties of both, required of both, the first one's other keywords. */
  function merge(a: Schema, b: Schema): Schema {
    spend(1 + Object.keys(a).length + Object.keys(b).length);
    const merged: Schema = { ...b, ...a };
    const pa = own(a, 'properties');
    const pb = own(b, 'properties');
    if (isSchema(pa) && isSchema(pb)) {
      spend(Object.keys(pa).length + Object.keys(pb).length);
      const properties: Schema = { ...pb };
      for (const [name, schema] of Object.entries(pa)) {
        put(properties, name, Object.hasOwn(pb, name) ? { allOf: [schema, pb[name]] } : schema);
      }
      merged.properties = properties;
    }
    const ra = own(a, 'required');
    const rb = own(b, 'required');
    if (Array.isArray(ra) && Array.isArray(rb)) {
      spend(ra.length + rb.length);
      merged.required = [...ra, ...rb];
    }
    // A part that names no type takes the other's (a part of only `required`, say).
    if (own(a, 'type') === undefined && own(b, 'type') !== undefined) merged.type = b.type;
    return merged;
  }

  function make(input: unknown, depth: number, refs: ReadonlySet<string>): unknown {
    spend(1 + refs.size);
    if (depth > MAX_DEPTH) return NONE;
    const path = new Set(refs);
    const schema = flatten(input, path);
    if (schema === NONE) return NONE;
    if (Object.hasOwn(schema, 'const')) return emit(schema.const);
    const examples = own(schema, 'examples');
    if (Array.isArray(examples) && examples.length > 0) return emit(examples[0]);
    for (const key of ['example', 'default']) if (Object.hasOwn(schema, key)) return emit(schema[key]);
    const enumeration = own(schema, 'enum');
    if (Array.isArray(enumeration) && enumeration.length > 0) return emit(enumeration[0]);
    const next = (s: unknown) => make(s, depth + 1, path);

    for (const key of ['oneOf', 'anyOf']) {
      const options = own(schema, key);
      if (!Array.isArray(options)) continue;
      spend(Object.keys(schema).length + options.length);
      const { [key]: _options, ...rest } = schema;
      // An option that is only null last: a payload wants the other.
      const ordered = [...options.filter((o) => !onlyNull(o)), ...options.filter(onlyNull)];
      for (const option of ordered) {
        const seen = new Set(path);
        const folded = flatten(option, seen);
        if (folded === NONE) continue;
        // The schema's own keywords apply beside the option's: the option's type and properties, its own bounds.
        const value = make(merge(folded, rest), depth + 1, seen);
        if (value !== NONE) return value;
      }
      return NONE;
    }

    const declared = own(schema, 'type');
    const types = Array.isArray(declared) ? declared : [declared];
    const type =
      types.find((t) => typeof t === 'string' && t !== 'null') ??
      (isSchema(own(schema, 'properties'))
        ? 'object'
        : own(schema, 'items') !== undefined
          ? 'array'
          : types[0]);
    switch (type) {
      case 'object':
        return object(schema, next);
      case 'array':
        return array(schema, next);
      case 'string':
        return emit(string(schema));
      case 'integer':
      case 'number': {
        const value = number(schema, type === 'integer');
        return value === undefined ? NONE : emit(value);
      }
      case 'boolean':
        return emit(true);
      case 'null':
      case undefined:
        return emit(null);
      default:
        return NONE;
    }
  }

  function object(schema: Schema, next: (s: unknown) => unknown): unknown {
    const made: Record<string, unknown> = {};
    emit(made, 2);
    const required = own(schema, 'required');
    const properties = own(schema, 'properties');
    const entries = Object.entries(isSchema(properties) ? properties : {});
    spend(entries.length);
    for (const [name, property] of entries) {
      const value = next(property);
      if (value !== NONE) {
        emit(name, name.length + 4);
        put(made, name, value);
      } else if (Array.isArray(required)) {
        spend(required.length);
        if (required.includes(name)) return NONE;
      }
    }
    // Required names no property describes, then as many more as minProperties asks, from
    // additionalProperties (any value where it says nothing; none where it is false).
    const extra = own(schema, 'additionalProperties') ?? true;
    const wanted = new Set<string>();
    if (Array.isArray(required)) {
      spend(required.length);
      for (const name of required)
        if (typeof name === 'string' && !Object.hasOwn(made, name)) wanted.add(name);
    }
    const minProperties = finite(schema, 'minProperties') ?? 0;
    const have = Object.keys(made).length;
    for (let i = 1; have + wanted.size < minProperties; i++) {
      spend(1);
      if (!Object.hasOwn(made, `key${i}`)) wanted.add(`key${i}`);
    }
    for (const name of wanted) {
      const value = extra === false ? NONE : next(extra);
      if (value === NONE) return NONE;
      emit(name, name.length + 4);
      put(made, name, value);
    }
    return made;
  }

  function array(schema: Schema, next: (s: unknown) => unknown): unknown {
    const tuple = own(schema, 'prefixItems');
    const prefix = Array.isArray(tuple) ? tuple : [];
    const items = own(schema, 'items');
    const minItems = finite(schema, 'minItems') ?? 0;
    const maxItems = finite(schema, 'maxItems') ?? Number.POSITIVE_INFINITY;
    // One item shows the items' shape; uniqueItems would need them to differ, so then no more than one.
    const wanted = Math.max(prefix.length, minItems, items === undefined || items === false ? 0 : 1);
    const unique = own(schema, 'uniqueItems') === true ? Math.max(1, prefix.length) : wanted;
    const count = Math.min(wanted, maxItems, unique);
    const made: unknown[] = [];
    emit(made, 2);
    for (let i = 0; i < count; i++) {
      const item = i < prefix.length ? prefix[i] : (items ?? true);
      if (item === false) break;
      const value = next(item);
      if (value === NONE) break;
      made.push(value);
      emit(null, 1);
    }
    return made.length >= minItems ? made : NONE;
  }

  /** One its pattern matches, else its format's, else text: each only within its length bounds. */
  function string(schema: Schema): string {
    const min = finite(schema, 'minLength') ?? 0;
    const max = finite(schema, 'maxLength') ?? Number.POSITIVE_INFINITY;
    const pattern = own(schema, 'pattern');
    if (typeof pattern === 'string') {
      spend(pattern.length);
      const matching = stringFromPattern(pattern, min, max, maxBytes - bytes);
      if (matching !== undefined) return matching;
    }
    const format = own(schema, 'format');
    const formatted = typeof format === 'string' ? STRING_FORMATS.get(format) : undefined;
    if (formatted !== undefined && formatted.length >= min && formatted.length <= max) return formatted;
    // The size budget (emit) bounds what a huge minLength asks for before the string is built.
    emit(null, Math.max(0, Math.min(min, max) - 4));
    return 'string'.padEnd(Math.min(min, max), 'x').slice(0, Math.max(0, max));
  }

  try {
    const value = make(root, 0, new Set(['#']));
    return value === NONE ? { problem: 'the schema admits no value that can be made' } : { value };
  } catch (error) {
    if (error instanceof Stop) return { problem: error.message };
    // A net under the bounds above: no schema may take the process's stack.
    if (error instanceof RangeError)
      return { problem: 'the schema nests too deeply to make an example from' };
    throw error;
  }
}

/**
 * A number within the schema's bounds: 0 when they allow it, else the bound nearest to it, moved
 * inside an exclusive bound, a multiple of multipleOf where one fits. Draft 4's boolean
 * exclusiveMinimum/exclusiveMaximum (OpenAPI 3.0) are read too. Undefined when none fits.
 */
function number(schema: Schema, integer: boolean): number | undefined {
  const minimum = finite(schema, 'minimum');
  const maximum = finite(schema, 'maximum');
  const exMin = own(schema, 'exclusiveMinimum');
  const exMax = own(schema, 'exclusiveMaximum');
  const lo = typeof exMin === 'number' ? exMin : minimum;
  const hi = typeof exMax === 'number' ? exMax : maximum;
  const loOpen = typeof exMin === 'number' || (exMin === true && minimum !== undefined);
  const hiOpen = typeof exMax === 'number' || (exMax === true && maximum !== undefined);
  const step = finite(schema, 'multipleOf');
  const fits = (v: number) =>
    Number.isFinite(v) &&
    (!integer || Number.isInteger(v)) &&
    (lo === undefined || (loOpen ? v > lo : v >= lo)) &&
    (hi === undefined || (hiOpen ? v < hi : v <= hi));
  const snap = (v: number, up: boolean) => {
    let s = v;
    if (step !== undefined && step > 0) s = (up ? Math.ceil(v / step) : Math.floor(v / step)) * step;
    else if (integer) s = up ? Math.ceil(v) : Math.floor(v);
    return Number(s.toPrecision(15));
  };
  const candidates = [0];
  if (lo !== undefined) {
    candidates.push(snap(lo, true));
    if (loOpen) candidates.push(snap(lo + (step ?? 1), true), hi === undefined ? lo + 1 : (lo + hi) / 2);
  }
  if (hi !== undefined) {
    candidates.push(snap(hi, false));
    if (hiOpen) candidates.push(snap(hi - (step ?? 1), false), lo === undefined ? hi - 1 : (lo + hi) / 2);
  }
  return candidates.find(fits);
}
