/**
 * A plausible value for a JSON Schema, for send-example when an event type's schema has no
 * examples: what the schema itself offers first (`const`, `examples`, OpenAPI's `example`,
 * `default`, `enum`), else a value made from its type and bounds, every property included.
 * Deterministic (the one time it needs is given), and bounded: schemas are stored user input.
 */

type Schema = Record<string, unknown>;

/** Nesting, and values made in all: far beyond any payload schema, short of a costly one. */
const MAX_DEPTH = 32;
const MAX_VALUES = 10_000;
/** References followed in a row without reaching a schema: a chain, or a cycle of `$ref`s alone. */
const MAX_REF_HOPS = 32;

/** Nothing to make: a cycle, a budget spent, a schema that admits no value Courier can build. */
const NONE = Symbol('none');
type Made = unknown | typeof NONE;

const isSchema = (value: unknown): value is Schema =>
  value !== null && typeof value === 'object' && !Array.isArray(value);

export function exampleFromSchema(root: unknown, now: number): unknown | undefined {
  let made = 0;
  const iso = new Date(now).toISOString();
  const STRING_FORMATS: Record<string, string> = {
    'date-time': iso,
    date: iso.slice(0, 10),
    time: iso.slice(11),
    email: 'user@example.com',
    'idn-email': 'user@example.com',
    hostname: 'example.com',
    'idn-hostname': 'example.com',
    ipv4: '192.0.2.1',
    ipv6: '2001:db8::1',
    uri: 'https://example.com/',
    'uri-reference': 'https://example.com/',
    iri: 'https://example.com/',
    url: 'https://example.com/',
    uuid: '00000000-0000-4000-8000-000000000000',
    duration: 'PT1M',
  };

  /** The schema a local `$ref` (`#/…`) points at, or NONE. */
  function resolve(ref: unknown): Schema | boolean | typeof NONE {
    if (typeof ref !== 'string' || !ref.startsWith('#')) return NONE;
    let node: unknown = root;
    for (const raw of ref.slice(1).split('/').slice(1)) {
      const key = decodeURIComponent(raw).replaceAll('~1', '/').replaceAll('~0', '~');
      if (!isSchema(node) && !Array.isArray(node)) return NONE;
      node = (node as Record<string, unknown>)[key];
    }
    return isSchema(node) || typeof node === 'boolean' ? node : NONE;
  }

  function make(input: unknown, depth: number, refs: ReadonlySet<string>): Made {
    if (++made > MAX_VALUES || depth > MAX_DEPTH) return NONE;
    if (input === true) return null;
    if (!isSchema(input)) return NONE;
    let schema = input;
    const seen = new Set(refs);
    for (let hops = 0; typeof schema.$ref === 'string'; hops++) {
      // A reference back into a schema being made: an optional property is left out there.
      if (seen.has(schema.$ref) || hops >= MAX_REF_HOPS) return NONE;
      seen.add(schema.$ref);
      const target = resolve(schema.$ref);
      if (target === NONE || target === false) return NONE;
      if (target === true) return null;
      // Draft 2019+ allows siblings beside $ref: they narrow it, and win here.
      const { $ref: _ref, ...siblings } = schema;
      schema = { ...target, ...siblings };
    }
    if ('const' in schema) return schema.const;
    if (Array.isArray(schema.examples) && schema.examples.length > 0) return schema.examples[0];
    if ('example' in schema) return schema.example;
    if ('default' in schema) return schema.default;
    if (Array.isArray(schema.enum) && schema.enum.length > 0) return schema.enum[0];
    const next = (s: unknown) => make(s, depth + 1, seen);

    if (Array.isArray(schema.allOf) && schema.allOf.length > 0) {
      // Each part's value, objects merged: the usual allOf is a base type and its extension.
      const { allOf, ...own } = schema;
      const parts = own.type !== undefined || own.properties !== undefined ? [own, ...allOf] : allOf;
      const values = parts.map(next);
      if (values.includes(NONE)) return NONE;
      return values.every(isSchema) ? Object.assign({}, ...values) : values[0];
    }
    for (const options of [schema.oneOf, schema.anyOf]) {
      if (!Array.isArray(options)) continue;
      for (const option of options) {
        const value = next(option);
        if (value !== NONE) return value;
      }
      return NONE;
    }

    const types = Array.isArray(schema.type) ? schema.type : [schema.type];
    const type =
      types.find((t) => t !== 'null' && typeof t === 'string') ??
      (isSchema(schema.properties) ? 'object' : schema.items !== undefined ? 'array' : types[0]);
    switch (type) {
      case 'object': {
        const object: Record<string, unknown> = {};
        const required = new Set(Array.isArray(schema.required) ? schema.required : []);
        for (const [name, property] of Object.entries(isSchema(schema.properties) ? schema.properties : {})) {
          const value = next(property);
          if (value !== NONE) object[name] = value;
          else if (required.has(name)) return NONE;
        }
        return object;
      }
      case 'array': {
        const tuple = Array.isArray(schema.prefixItems) ? schema.prefixItems : [];
        // One item to show its shape, or as many as minItems asks (ten at most).
        const minItems = Number(schema.minItems) || 0;
        const shown = schema.items === undefined || schema.items === false ? 0 : 1;
        const count = Math.max(tuple.length, Math.min(minItems, 10), shown);
        const array: unknown[] = [];
        for (let i = 0; i < count; i++) {
          const item = i < tuple.length ? tuple[i] : (schema.items ?? true);
          if (item === false) break;
          const value = next(item);
          if (value === NONE) return array.length >= minItems ? array : NONE;
          array.push(value);
        }
        return array;
      }
      case 'string': {
        const format = typeof schema.format === 'string' ? STRING_FORMATS[schema.format] : undefined;
        if (format !== undefined) return format;
        const min = Number(schema.minLength) || 0;
        const max = Number(schema.maxLength) || Number.POSITIVE_INFINITY;
        return 'string'.padEnd(Math.min(min, 1000), 'x').slice(0, max);
      }
      case 'integer':
      case 'number':
        return number(schema, type === 'integer');
      case 'boolean':
        return true;
      case 'null':
        return null;
      case undefined:
        return null;
      default:
        return NONE;
    }
  }

  // The root is being made: a reference to it (`#`) is a cycle at once.
  const value = make(root, 0, new Set(['#']));
  return value === NONE ? undefined : value;
}

/** The smallest value the bounds allow, 0 when they allow it. */
function number(schema: Schema, integer: boolean): number {
  const bound = (key: string) => (typeof schema[key] === 'number' ? (schema[key] as number) : undefined);
  const step = bound('multipleOf') ?? (integer ? 1 : undefined);
  const exclusiveMin = bound('exclusiveMinimum');
  const min = bound('minimum') ?? (exclusiveMin === undefined ? undefined : exclusiveMin + (step ?? 1));
  const exclusiveMax = bound('exclusiveMaximum');
  const max = bound('maximum') ?? (exclusiveMax === undefined ? undefined : exclusiveMax - (step ?? 1));
  let value = min !== undefined && min > 0 ? min : max !== undefined && max < 0 ? max : 0;
  if (step !== undefined && step > 0) value = Math.ceil(value / step) * step;
  return value;
}
