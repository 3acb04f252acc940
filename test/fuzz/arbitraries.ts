/**
 * fast-check generators of hostile requests. Bodies are generated from each route's own JSON
 * schema (so every field gets wrong types, nulls, missing and extra siblings), then serialized,
 * usually as JSON and sometimes with the bytes mangled (truncated, trailing garbage, BOM, NaN
 * literals, duplicate and `__proto__` keys, deep nesting, invalid UTF-8, oversized).
 */
import fc from 'fast-check';
import type { RouteRecord } from '../../src/api/route-table.ts';
import type { FuzzRequest } from './harness.ts';

export const TOKEN = 'test-token-0123456789';
export const MAX_BODY = 1024 * 1024;
export const MiB = 1024 * 1024;

/** Path parameters that resolve, at send time, to the fixtures alive then (see api-fuzz.test.ts). */
export type Ref = 'app.uid' | 'app.id' | 'ep.uid' | 'ep.id' | 'msg.eventId' | 'msg.id' | 'eventType';
export type Segment = { ref: Ref } | { raw: string };
export type Fixtures = Record<Ref, string>;

type Schema = {
  type?: string | string[];
  properties?: Record<string, Schema>;
  required?: string[];
  additionalProperties?: boolean | Schema;
  items?: Schema;
  anyOf?: Schema[];
  enum?: unknown[];
  minimum?: number;
  maximum?: number;
  minLength?: number;
  maxLength?: number;
  minItems?: number;
  maxItems?: number;
  pattern?: string;
  format?: string;
};

const w = <T>(weight: number, arbitrary: fc.Arbitrary<T>) => ({ weight, arbitrary });

/** encodeURIComponent throws on lone surrogates; those are sent as raw bytes elsewhere. */
const wellFormed = (s: string) => s.replace(/[\uD800-\uDFFF]/gu, '\uFFFD');

// ---------------------------------------------------------------------------------------------
// Strings and scalars

const CROCKFORD = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';
export const fakeId = (prefix: string) =>
  fc
    .array(fc.constantFrom(...CROCKFORD), { minLength: 26, maxLength: 26 })
    .map((cs) => `${prefix}_${cs.join('')}`);

const repeat = (unit: string, n: number) => unit.repeat(n);

/** Strings that have hurt someone somewhere. */
export const NASTY_STRINGS: string[] = [
  '',
  ' ',
  '\u0000',
  'a\u0000b',
  '\ud800',
  'x\udfffy',
  '\udc00\ud800',
  '\u202egnp.exe',
  '\u200b\u200d\ufeff',
  '😀👩‍👩‍👧‍👦🏳️‍🌈',
  repeat('😀', 300),
  repeat('é', 300),
  'e\u0301\u0301\u0301',
  '\r\n',
  'x\r\nSet-Cookie: a=b',
  '\u0085\u2028\u2029',
  '\t\u000b\f',
  '\u007f\u0080\u009f',
  '../../etc/passwd',
  '..',
  "'; drop table courier_applications; --",
  "' OR '1'='1",
  '1; select pg_sleep(10)',
  '$1',
  '%00',
  '%s%n%x',
  // biome-ignore lint/suspicious/noTemplateCurlyInString: the literal text is the attack
  '${jndi:ldap://x}',
  '<script>alert(1)</script>',
  '{{7*7}}',
  '\\',
  '"',
  'null',
  'undefined',
  'NaN',
  'Infinity',
  '__proto__',
  'constructor',
  'prototype',
  'toString',
  'hasOwnProperty',
  'app_01KDWPVNG0Z2T6P6PJXKZK51B0',
  'ep_01KDWPVNG0Z2T6P6PJXKZK51B0',
  'msg_01KDWPVNG0Z2T6P6PJXKZK51B0',
  'app_',
  'app_lowercase0000000000000000',
  repeat('a', 256),
  repeat('a', 257),
  repeat('a', 4097),
  repeat('x', 65_536),
];

const unicodeString = fc.oneof(
  fc.string({ unit: 'grapheme', maxLength: 40 }),
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.string({ unit: 'binary-ascii', maxLength: 40 }),
);

export const nastyString: fc.Arbitrary<string> = fc.oneof(
  w(5, fc.constantFrom(...NASTY_STRINGS)),
  w(3, unicodeString),
  w(
    1,
    fc
      .tuple(fc.constantFrom('a', '\u0000', '\ud800', '😀', 'é'), fc.integer({ min: 1, max: 2_000 }))
      .map(([u, n]) => u.repeat(n)),
  ),
);

const hugeString = fc
  .constantFrom(100_000, 600_000, 900_000, MAX_BODY + 1, 2 * MiB)
  .map((n) => 'x'.repeat(n));

const nastyNumber = fc.constantFrom(
  0,
  -0,
  -1,
  1.5,
  0.1,
  2 ** 31 - 1,
  2 ** 31,
  2 ** 32,
  2 ** 53 - 1,
  2 ** 53 + 2,
  -(2 ** 63),
  1e21,
  1e308,
  -1e308,
  5e-324,
  Number.MAX_VALUE,
);

const nastyScalar: fc.Arbitrary<unknown> = fc.oneof(
  w(3, nastyNumber),
  w(3, nastyString),
  w(2, fc.constantFrom(null, true, false)),
  w(1, fc.constantFrom('true', '1', '0', 'false', '2026-01-01T00:00:00Z')),
);

/** A value of the wrong shape for about anything. */
export const wrongValue: fc.Arbitrary<unknown> = fc.oneof(
  w(6, nastyScalar),
  w(1, fc.constantFrom([], [null], {}, { $gt: '' }, [[[[]]]], { a: { b: { c: {} } } })),
  w(1, fc.array(nastyScalar, { maxLength: 4 })),
  w(1, fc.dictionary(nastyString, nastyScalar, { maxKeys: 4 })),
  w(1, fc.jsonValue({ maxDepth: 3 })),
);

// ---------------------------------------------------------------------------------------------
// Field-specific pools

const dateString = fc.oneof(
  w(
    4,
    fc
      .date({ min: new Date('1970-01-01'), max: new Date('2100-01-01'), noInvalidDate: true })
      .map((d) => d.toISOString()),
  ),
  w(
    3,
    fc.constantFrom(
      'yesterday',
      'now',
      '',
      '2026-01-01',
      '2026-01-01T00:00:00',
      '2026-13-01T00:00:00Z',
      '2026-02-30T00:00:00Z',
      '2026-01-01T24:00:00Z',
      '2016-12-31T23:59:60Z',
      '2016-12-31T23:59:60+00:00',
      '2026-06-30T23:59:60Z',
      '2026-01-01t12:00:00z',
      '2026-01-01 12:00:00Z',
      '2026-01-01T12:00:00.123456789Z',
      '2026-01-01T12:00:00+23:59',
      '2026-01-01T12:00:00-25:00',
      '0000-01-01T00:00:00Z',
      '9999-12-31T23:59:59Z',
      '+275760-09-13T00:00:00Z',
      '1e9',
      '-1',
      'NaN',
    ),
  ),
);

const url = fc.oneof(
  w(4, fc.constantFrom('https://example.com/hook', 'http://127.0.0.1:9/x', 'https://example.org/a?b=c#d')),
  w(
    5,
    fc.constantFrom(
      'https://user:pass@example.com/',
      'https://:pass@example.com/',
      'http://10.0.0.1/',
      'http://192.168.1.1/',
      'http://169.254.169.254/latest/meta-data/',
      'http://[::1]/',
      'http://[::ffff:10.0.0.1]/',
      'http://[fd00::1]/',
      'http://0.0.0.0/',
      'http://0x7f.1/',
      'http://2130706433/',
      'http://localhost/',
      'javascript:alert(1)',
      'data:text/html,<script>alert(1)</script>',
      'file:///etc/passwd',
      'ftp://example.com/',
      'gopher://example.com/',
      '//example.com/',
      '/relative',
      'https://',
      'https://example.com/\u0000',
      'https://example.com/\r\nX-Injected: 1',
      'https://exa mple.com/',
      'https://例え.jp/',
      'https://xn--r8jz45g.jp/',
      'HTTPS://EXAMPLE.COM/',
      ` https://example.com/ `,
      'https://example.com:99999/',
      'https://example.com:-1/',
      'https://[::1',
      'https://example.com/\ud800',
    ),
  ),
  w(
    1,
    fc.constantFrom(4_000, 4_097, 70_000).map((n) => `https://example.com/${'a'.repeat(n)}`),
  ),
  w(1, nastyString),
);

const b64 = (n: number, fill = 7) => Buffer.alloc(n, fill).toString('base64');
const secret = fc.oneof(
  w(2, fc.constantFrom(`whsec_${b64(24)}`, `whsec_${b64(32)}`, `whsec_${b64(75)}`)),
  w(
    4,
    fc.constantFrom(
      'whsec_',
      `whsec_${b64(23)}`,
      `whsec_${b64(76)}`,
      `whsec_${b64(8)}`,
      'whsec_!!!!not-base64!!!!',
      `whsec_${b64(32).replace(/=+$/, '')}`,
      `whsec_${Buffer.alloc(32, 250).toString('base64url')}`,
      b64(32),
      'not-a-secret',
      `whsec_${b64(32)}\u0000`,
      `WHSEC_${b64(32)}`,
      `whsec_${'A'.repeat(250)}`,
    ),
  ),
  w(1, nastyString),
);

const headerName = fc.oneof(
  fc.constantFrom('X-Api-Key', 'authorization', 'X-Trace', 'x-a'),
  fc.constantFrom(
    '',
    'X Bad',
    'X:Bad',
    'X-Bad\r\nInjected',
    'X-Bad\u0000',
    'content-type',
    'Content-Length',
    'HOST',
    'webhook-signature',
    'Svix-Id',
    'transfer-encoding',
    'x-é',
    '(x)',
    'X-A',
    'x-a',
  ),
  nastyString,
);
const headerValue = fc.oneof(
  fc.constantFrom('v', 'Bearer abc', ''),
  fc.constantFrom(
    'a\r\nX-Injected: 1',
    'a\nb',
    'a\rb',
    'a\u0000b',
    'é',
    '€',
    '😀',
    '\u007f',
    ' \t ',
    'x'.repeat(5_000),
  ),
  nastyString,
);
const headersMap = fc.oneof(
  w(3, fc.dictionary(headerName, headerValue, { maxKeys: 4 })),
  w(
    1,
    fc
      .constantFrom(49, 50, 51, 200)
      .map((n) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`X-H${i}`, 'v']))),
  ),
  w(1, wrongValue),
);

const policyNumber = fc.oneof(
  fc.integer({ min: 0, max: 100_000 }),
  nastyNumber,
  fc.constantFrom(-1, Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER + 1),
);
const retryPolicy = fc.oneof(
  w(1, fc.constant(null)),
  w(
    6,
    fc.record(
      {
        classifier: fc.record(
          {
            mode: fc.oneof(fc.constantFrom('strict', 'lenient'), nastyString),
            overrides: fc.dictionary(
              fc.oneof(fc.constantFrom('404', '500', '99', '600', 'abc', '1e2', '-1', '404.5'), nastyString),
              fc.oneof(fc.constantFrom('success', 'retry', 'permanent', 'maybe'), wrongValue),
              { maxKeys: 3 },
            ),
          },
          { requiredKeys: [] },
        ),
        backoff: fc.record(
          {
            kind: fc.oneof(fc.constantFrom('exponential', 'schedule', 'linear'), wrongValue),
            baseMs: policyNumber,
            capMs: policyNumber,
            scheduleMs: fc.oneof(
              fc.array(policyNumber, { maxLength: 5 }),
              fc.constantFrom([], Array(101).fill(1), Array(10_000).fill(0)),
            ),
            jitter: fc.oneof(fc.constantFrom('equal', 'full', 'none', 'some'), wrongValue),
          },
          { requiredKeys: [] },
        ),
        retryAfter: fc.record(
          {
            statuses: fc.array(fc.oneof(fc.constantFrom(429, 503, 99, 600, 0), nastyNumber), {
              maxLength: 4,
            }),
            ceilingMs: policyNumber,
          },
          { requiredKeys: [] },
        ),
        giveUp: fc.record({ maxAttempts: policyNumber, windowMs: policyNumber }, { requiredKeys: [] }),
        extra: wrongValue,
      },
      { requiredKeys: [] },
    ),
  ),
  w(1, wrongValue),
);

/** Any JSON object (message payloads, event-type schemas), now and then a large or deep one. */
const jsonObject = fc.oneof(
  w(6, fc.dictionary(fc.oneof(fc.string({ maxLength: 8 }), nastyString), fc.jsonValue({ maxDepth: 3 }))),
  w(1, fc.object({ maxDepth: 3, withNullPrototype: false })),
  w(
    1,
    fc.constantFrom(
      { big: 'y'.repeat(200_000) },
      { nul: '\u0000', lone: '\ud800', rtl: '\u202e', emoji: '😀' },
      { '': 1, ' ': 2, '\u0000': 3 },
      { n: 1e308, m: -0, k: 5e-324 },
    ),
  ),
);

const name = fc.oneof(
  w(4, fc.stringMatching(/^[a-z][a-z0-9.\-_]{0,20}$/)),
  w(1, fc.constantFrom('user.signup', 'a', 'A-Z_0.9')),
);

/** The generator for a body field, by name, when the schema alone says too little. */
const BY_FIELD: Record<string, fc.Arbitrary<unknown>> = {
  url: url,
  secret: secret,
  key: secret,
  headers: headersMap,
  retryPolicy: retryPolicy,
  payload: jsonObject,
  schemas: fc.oneof(jsonObject, fc.constant(null)),
  since: dateString,
  until: dateString,
  // Now and then the fixtures' own: conflicts (409) and get_if_exists.
  name: fc.oneof(w(4, name), w(1, fc.constant('fuzz.type'))),
  eventId: fc.oneof(w(2, name), w(4, fc.constant('fuzz-evt')), w(1, nastyString)),
  metadata: fc.oneof(
    w(3, fc.dictionary(fc.string({ maxLength: 10 }), fc.string({ maxLength: 20 }), { maxKeys: 4 })),
    w(2, fc.dictionary(nastyString, fc.oneof(nastyString, wrongValue), { maxKeys: 3 })),
    w(1, fc.constant(null)),
    w(1, wrongValue),
  ),
};

// ---------------------------------------------------------------------------------------------
// Schema-driven bodies

function goodFor(schema: Schema, field: string | undefined, depth: number): fc.Arbitrary<unknown> {
  if (field !== undefined && BY_FIELD[field]) return BY_FIELD[field];
  if (schema.anyOf) return fc.oneof(...schema.anyOf.map((s) => goodFor(s, undefined, depth)));
  if (Array.isArray(schema.type)) {
    return fc.oneof(...schema.type.map((t) => goodFor({ ...schema, type: t }, undefined, depth)));
  }
  if (schema.enum) return fc.constantFrom(...schema.enum);
  switch (schema.type) {
    case 'null':
      return fc.constant(null);
    case 'boolean':
      return fc.boolean();
    case 'integer':
      return fc.integer({
        min: Math.max(schema.minimum ?? -1000, -(2 ** 31)),
        max: Math.min(schema.maximum ?? 1000, 2 ** 31),
      });
    case 'number':
      return fc.double({ noNaN: true, noDefaultInfinity: true });
    case 'string': {
      if (schema.format === 'date-time') return dateString;
      if (schema.format === 'uid') return fc.oneof(name, fc.constantFrom('fuzz-app', 'fuzz-ep', 'app_x'));
      if (schema.pattern) return name;
      return fc.string({ maxLength: Math.min(schema.maxLength ?? 40, 40) });
    }
    case 'array': {
      const item = schema.items ? fieldValue(schema.items, undefined, depth + 1) : wrongValue;
      return fc.array(item, { maxLength: Math.min(schema.maxItems ?? 4, 4) });
    }
    case 'object':
      return objectFor(schema, depth);
    default:
      return jsonObject;
  }
}

/** Mostly a plausible value, sometimes a wrong one (wrong type, null, nasty string, huge). */
function fieldValue(schema: Schema, field: string | undefined, depth: number): fc.Arbitrary<unknown> {
  if (depth > 4) return wrongValue;
  return fc.oneof(
    w(140, goodFor(schema, field, depth)),
    w(30, wrongValue),
    w(10, fc.constant(null)),
    w(10, nastyString),
    w(1, hugeString),
  );
}

function objectFor(schema: Schema, depth: number): fc.Arbitrary<unknown> {
  const props = schema.properties;
  if (!props) {
    if (schema.additionalProperties && typeof schema.additionalProperties === 'object') {
      return fc.dictionary(
        fc.oneof(w(3, fc.string({ maxLength: 10 })), w(1, nastyString)),
        fieldValue(schema.additionalProperties, undefined, depth + 1),
        { maxKeys: 4 },
      );
    }
    return jsonObject;
  }
  const required = new Set(schema.required ?? []);
  const entries = Object.entries(props).map(([key, sub]) =>
    fc.option(
      fieldValue(sub, key, depth + 1).map((v) => [key, v] as const),
      // Required fields are usually there; optional ones half the time.
      { freq: required.has(key) ? 12 : 1, nil: undefined },
    ),
  );
  const extra = fc.option(
    fc.tuple(fc.oneof(fc.constantFrom('extra', 'somethingNew', 'id', 'createdAt'), nastyString), wrongValue),
    { freq: 4, nil: undefined },
  );
  return fc.tuple(fc.tuple(...entries), extra).map(([pairs, more]) => {
    const out: Record<string, unknown> = {};
    for (const pair of pairs) if (pair) out[pair[0]] = pair[1];
    if (more) out[more[0]] = more[1];
    return out;
  });
}

/** A body for a route: the JSON value it should carry (mostly right, sometimes wrong). */
export function bodyValue(route: RouteRecord): fc.Arbitrary<unknown> {
  const schema = route.schema?.body as Schema | undefined;
  if (!schema) return fc.oneof(w(3, fc.constant(undefined)), w(1, jsonObject), w(1, wrongValue));
  return fc.oneof(w(12, goodFor(schema, undefined, 0)), w(2, wrongValue), w(1, fc.constant(undefined)));
}

// ---------------------------------------------------------------------------------------------
// Serialization (and mangling) of bodies

export interface Encoded {
  body?: Buffer;
  sent?: unknown;
  mutation: string;
}

const deepText = (levels: number, kind: 'array' | 'object') =>
  kind === 'array'
    ? '['.repeat(levels) + ']'.repeat(levels)
    : '{"a":'.repeat(levels) + '1' + '}'.repeat(levels);

const INVALID_UTF8: Buffer[] = [
  Buffer.from([0xc0, 0xaf]), // overlong '/'
  Buffer.from([0xe0, 0x80, 0xaf]), // overlong '/', 3 bytes
  Buffer.from([0xf0, 0x80, 0x80, 0xaf]), // overlong '/', 4 bytes
  Buffer.from([0xc0, 0x80]), // overlong NUL
  Buffer.from([0xed, 0xa0, 0x80]), // a UTF-16 surrogate encoded as UTF-8
  Buffer.from([0xff, 0xfe]),
  Buffer.from([0xe2, 0x82]), // truncated '€'
  Buffer.from([0x80]),
  Buffer.from([0xf4, 0x90, 0x80, 0x80]), // above U+10FFFF
];

/** Inserts bytes just after the first `"` of a string value (or at the start). */
function intoFirstString(text: string, bytes: Buffer): Buffer {
  const at = text.indexOf(':"');
  const i = at < 0 ? 0 : at + 2;
  return Buffer.concat([Buffer.from(text.slice(0, i)), bytes, Buffer.from(text.slice(i))]);
}

type Mutation = (text: string, value: unknown) => { body: Buffer; keepsValue?: boolean };

const MUTATIONS: Record<string, fc.Arbitrary<Mutation>> = {
  truncate: fc
    .double({ min: 0, max: 1, noNaN: true })
    .map((f) => (text: string) => ({ body: Buffer.from(text.slice(0, Math.floor(text.length * f))) })),
  trailing: fc
    .constantFrom('}', ',', ' x', '\u0000', '{}', '[]', ' // c', '\n\n{"a":1}', 'null')
    .map((tail) => (text: string) => ({ body: Buffer.from(text + tail) })),
  bom: fc.constant((text: string) => ({
    body: Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(text)]),
  })),
  doubleBom: fc.constant((text: string) => ({ body: Buffer.from(`\ufeff\ufeff${text}`) })),
  numberLiteral: fc
    .constantFrom(
      'NaN',
      'Infinity',
      '-Infinity',
      '1e400',
      '-1e400',
      '0x10',
      '01',
      '+1',
      '.5',
      '1.',
      '-',
      '1e',
    )
    .map((lit) => (text: string) => ({
      body: Buffer.from(text.replace(/(:\s*)(-?\d[\d.eE+-]*|null|true|false|"[^"]*")/, `$1${lit}`)),
    })),
  hugeNumber: fc
    .constantFrom(`1${'0'.repeat(400)}`, `-${'9'.repeat(5_000)}`, `0.${'0'.repeat(400)}1`, '1e-400')
    .map((lit) => (text: string) => ({ body: Buffer.from(text.replace(/^\{/, `{"n":${lit},`)) })),
  duplicateKey: fc.constant((text: string, value: unknown) => {
    const key = value && typeof value === 'object' ? Object.keys(value)[0] : undefined;
    return { body: Buffer.from(key ? text.replace(/^\{/, `{${JSON.stringify(key)}:null,`) : text) };
  }),
  protoKey: fc
    .constantFrom(
      '"__proto__":{"isAdmin":true}',
      '"constructor":{"prototype":{"isAdmin":true}}',
      '"\\u005f_proto__":{"x":1}',
      '"__proto__":null',
      '"constructor":1',
    )
    .map((kv) => (text: string) => ({
      body: Buffer.from(text.startsWith('{') ? `{${kv},${text.slice(1)}` : `{${kv}}`),
    })),
  nestedProto: fc.constant((text: string) => ({
    body: Buffer.from(text.replace(/^\{/, '{"metadata":{"__proto__":{"polluted":"yes"}},')),
  })),
  deep: fc
    .tuple(
      fc.constantFrom(64, 127, 129, 1_000, 5_000, 10_000, 100_000),
      fc.constantFrom('array', 'object') as fc.Arbitrary<'array' | 'object'>,
    )
    .map(([levels, kind]) => (text: string) => {
      const deep = deepText(levels, kind);
      // Into the field that is stored or serialized again when there is one, else a new field.
      for (const field of ['payload', 'schemas', 'metadata', 'retryPolicy', 'headers']) {
        const re = new RegExp(`"${field}":`);
        if (re.test(text)) return { body: Buffer.from(text.replace(re, `"${field}":${deep},"_${field}":`)) };
      }
      return { body: Buffer.from(text.startsWith('{') ? `{"deep":${deep},${text.slice(1)}` : deep) };
    }),
  loneSurrogateEscape: fc
    .constantFrom('\\ud800', '\\udfff', '\\udc00\\ud800', '\\uDBFF')
    .map((esc) => (text: string) => ({ body: intoFirstString(text, Buffer.from(esc)) })),
  nulEscape: fc.constant((text: string) => ({ body: intoFirstString(text, Buffer.from('\\u0000')) })),
  rawControl: fc
    .constantFrom('\u0000', '\n', '\r', '\t', '\u001f')
    .map((c) => (text: string) => ({ body: intoFirstString(text, Buffer.from(c)) })),
  invalidUtf8: fc
    .constantFrom(...INVALID_UTF8)
    .map((bytes) => (text: string) => ({ body: intoFirstString(text, bytes) })),
  singleQuotes: fc.constant((text: string) => ({ body: Buffer.from(text.replace(/"/g, "'")) })),
  empty: fc.constantFrom('', ' ', '\n', '\r\n\t ').map((s) => () => ({ body: Buffer.from(s) })),
  scalar: fc
    .constantFrom('null', 'true', '0', '"x"', '[]', '[{}]', '1e400', '-0', '"\\u0000"')
    .map((s) => () => ({ body: Buffer.from(s) })),
  oversized: fc.constantFrom(MAX_BODY + 1, MAX_BODY + 4096, 2 * MiB).map((size) => (text: string) => {
    const pad = Math.max(0, size - text.length - 12);
    return {
      body: Buffer.from(
        text.startsWith('{') ? `{"pad":"${'p'.repeat(pad)}",${text.slice(1)}` : 'p'.repeat(size),
      ),
    };
  }),
  justUnderLimit: fc.constant((text: string) => {
    const pad = Math.max(0, MAX_BODY - text.length - 20);
    return {
      body: Buffer.from(text.startsWith('{') ? `{"pad":"${'p'.repeat(pad)}",${text.slice(1)}` : text),
    };
  }),
  utf16: fc.constant((text: string) => ({ body: Buffer.from(text, 'utf16le') })),
  latin1: fc.constant((text: string) => ({ body: Buffer.from(`${text.slice(0, -1)},"é":"ü"}`, 'latin1') })),
};

const mutation = fc.oneof(
  ...Object.entries(MUTATIONS).map(([label, arb]) => arb.map((fn) => ({ label, fn }))),
);

export function encodeBody(value: unknown): fc.Arbitrary<Encoded> {
  if (value === undefined) {
    return fc.oneof(
      w(4, fc.constant({ mutation: 'absent' } as Encoded)),
      w(
        1,
        mutation.map(({ label, fn }) => ({ body: fn('{}', {}).body, mutation: label })),
      ),
    );
  }
  const text = JSON.stringify(value);
  return fc.oneof(
    w(3, fc.constant({ body: Buffer.from(text), sent: value, mutation: 'json' } as Encoded)),
    w(
      1,
      mutation.map(({ label, fn }) => ({ body: fn(text, value).body, mutation: label })),
    ),
  );
}

// ---------------------------------------------------------------------------------------------
// Paths, queries and headers

export const HOSTILE_SEGMENTS: string[] = [
  '',
  '.',
  '..',
  '...',
  '../..',
  '..%2F..%2Fetc%2Fpasswd',
  '%2e%2e',
  '%2E%2E%2F',
  '%00',
  'a%00b',
  '%2F',
  'a%2Fb',
  '%5C',
  '%25',
  '%25%32%46',
  '%FF',
  '%E0%A4%A',
  '%C0%AF',
  '%ED%A0%80',
  '%F0%9F%98%80',
  '%E2%80%AE',
  '%EF%BB%BF',
  '%0D%0ASet-Cookie:%20x=1',
  '%20',
  '+',
  '*',
  '~',
  '$',
  '@',
  ';',
  '%3B',
  '%27%3B%20drop%20table%20courier_applications%3B--',
  '%27%20OR%20%271%27%3D%271',
  '1%20or%201%3D1',
  'null',
  'undefined',
  '__proto__',
  'constructor',
  'prototype',
  'app_01KDWPVNG0Z2T6P6PJXKZK51B0',
  'ep_01KDWPVNG0Z2T6P6PJXKZK51B0',
  'msg_01KDWPVNG0Z2T6P6PJXKZK51B0',
  'atmpt_01KDWPVNG0Z2T6P6PJXKZK51B0',
  'app_',
  'APP_01KDWPVNG0Z2T6P6PJXKZK51B0',
  'a'.repeat(256),
  'a'.repeat(257),
  'a'.repeat(300),
  'a'.repeat(513),
  'a'.repeat(4_000),
  '%41'.repeat(300),
];

const segmentArb = (refs: Ref[], raw: fc.Arbitrary<string>): fc.Arbitrary<Segment> =>
  fc.oneof(
    w(
      6,
      fc.constantFrom(...refs).map((ref) => ({ ref })),
    ),
    w(
      3,
      fc.constantFrom(...HOSTILE_SEGMENTS).map((s) => ({ raw: s })),
    ),
    w(
      1,
      fc.oneof(nastyString, raw).map((s) => ({ raw: encodeURIComponent(wellFormed(s)) })),
    ),
  );

const PARAMS: Record<string, fc.Arbitrary<Segment>> = {
  app_id: segmentArb(['app.uid', 'app.id'], fakeId('app')),
  endpoint_id: segmentArb(['ep.uid', 'ep.id'], fakeId('ep')),
  msg_id: segmentArb(['msg.eventId', 'msg.id'], fakeId('msg')),
  attempt_id: fc.oneof(
    fakeId('atmpt').map((raw) => ({ raw })),
    fc.constantFrom(...HOSTILE_SEGMENTS).map((raw) => ({ raw })),
  ),
  event_type_name: segmentArb(['eventType'], name),
};

const QUERY_VALUES: Record<string, fc.Arbitrary<string>> = {
  limit: fc.oneof(
    fc.integer({ min: 1, max: 250 }).map(String),
    fc.constantFrom(
      '-1',
      '0',
      '251',
      '1e9',
      '1e1',
      '1.5',
      'abc',
      '',
      ' 5',
      '0x10',
      'Infinity',
      'NaN',
      '9'.repeat(400),
    ),
  ),
  iterator: fc.oneof(
    fakeId('app'),
    fakeId('ep'),
    fakeId('msg').map((id) => `-${id}`),
    fakeId('atmpt'),
    fakeId('opev'),
    fc.constantFrom(
      '-',
      '--',
      '-x',
      'garbage',
      '',
      '123',
      '999999999999999',
      '9999999999999999',
      '-1',
      'app_',
      '%00',
    ),
    nastyString.map((s) => s.slice(0, 300)),
  ),
  order: fc.constantFrom('ascending', 'descending', 'sideways', '', 'ASCENDING', 'desc'),
  before: dateString,
  after: dateString,
  since: dateString,
  until: dateString,
  with_content: fc.constantFrom('true', 'false', 'maybe', '1', '0', '', 'TRUE'),
  get_if_exists: fc.constantFrom('true', 'false', 'maybe', '1', ''),
  include_archived: fc.constantFrom('true', 'false', 'yes'),
  expunge: fc.constantFrom('true', 'false', '2'),
  status: fc.constantFrom('0', '1', '2', '3', '4', '5', '-1', 'abc', '0.5'),
  channel: fc.oneof(name, nastyString),
  tag: fc.oneof(name, nastyString),
  event_types: fc.oneof(name, fc.constantFrom('a,,b', ',', 'a b', `${'a,'.repeat(200)}a`), nastyString),
  endpoint_id: fc.oneof(fc.constantFrom('fuzz-ep', 'nope'), nastyString),
};

const queryString = (route: RouteRecord): fc.Arbitrary<string> => {
  const props = Object.keys((route.schema?.querystring as Schema | undefined)?.properties ?? {});
  const declared = props.map((key) =>
    fc.option(
      fc
        .array(
          (QUERY_VALUES[key] ?? nastyString).map((v) => `${key}=${encodeURIComponent(wellFormed(v))}`),
          {
            minLength: 1,
            maxLength: 2,
          },
        )
        .map((vs) => vs.join('&')),
      { freq: 2, nil: undefined },
    ),
  );
  const junk = fc.option(
    fc.constantFrom(
      '__proto__=1',
      'constructor[prototype][x]=1',
      'a[b]=1',
      'limit[]=1',
      'x=%',
      'x=%zz',
      '=',
      '&&&',
      'x=%00',
      'x=%FF',
      `x=${'y'.repeat(3_000)}`,
      'exclude_apps_with_no_endpoints=true',
    ),
    { freq: 5, nil: undefined },
  );
  return fc.tuple(fc.tuple(...declared), junk).map(([parts, more]) => {
    const all = [...parts.filter((p): p is string => p !== undefined), ...(more ? [more] : [])];
    return all.length > 0 ? `?${all.join('&')}` : '';
  });
};

export const AUTH = fc.oneof(
  w(40, fc.constant({ header: `Bearer ${TOKEN}` as string | undefined, valid: true })),
  w(1, fc.constant({ header: `bearer  ${TOKEN} `, valid: true })),
  w(
    5,
    fc
      .constantFrom(
        undefined,
        '',
        'Bearer',
        'Bearer ',
        'Bearer wrong-token-0123456789',
        `Bearer ${TOKEN}x`,
        `Bearer ${TOKEN} extra`,
        `Basic ${Buffer.from(`admin:${TOKEN}`).toString('base64')}`,
        TOKEN,
        `Bearer ${'A'.repeat(8_000)}`,
        `Bearer ${TOKEN.toUpperCase()}`,
        'Bearer é',
      )
      .map((header) => ({ header, valid: false })),
  ),
);

const CONTENT_TYPES = fc.oneof(
  w(30, fc.constant('application/json')),
  w(
    2,
    fc.constantFrom('application/json; charset=utf-8', 'Application/JSON', 'application/json;charset=UTF-8'),
  ),
  w(
    4,
    fc.constantFrom(
      undefined,
      '',
      'text/plain',
      'text/html',
      'application/x-www-form-urlencoded',
      'multipart/form-data; boundary=x',
      'application/xml',
      'application/json-patch+json',
      'application/vnd.api+json',
      'application/jsonx',
      'json',
      '*/*',
      'application/json; charset=latin1',
      'application/json; charset=utf-16',
      'application/json;;;',
      'application/json; boundary="',
      'application/octet-stream',
    ),
  ),
);

const OTHER_METHODS = [
  'GET',
  'HEAD',
  'POST',
  'PUT',
  'PATCH',
  'DELETE',
  'OPTIONS',
  'TRACE',
  'PROPFIND',
  'SEARCH',
  'PURGE',
];

const idempotencyKey = fc.oneof(
  w(3, fc.constantFrom('k1', 'k2', 'k3', 'shared-key')),
  w(
    3,
    fc.string({ unit: 'binary-ascii', minLength: 1, maxLength: 40 }).filter((s) => /^[\x21-\x7e]+$/.test(s)),
  ),
  w(1, fc.constantFrom('', ' ', 'x'.repeat(256), 'x'.repeat(257), 'é\u00ff', '%00', '../k')),
);

/** One request for this route: mostly well aimed, with hostile parts. */
export function requestFor(route: RouteRecord, fixtures: () => Fixtures): fc.Arbitrary<FuzzRequest> {
  const names = [...route.url.matchAll(/:(\w+)/g)].map((m) => m[1]!);
  const params = fc.tuple(...names.map((n) => PARAMS[n] ?? fc.constant({ raw: 'x' })));
  const takesBody = ['POST', 'PUT', 'PATCH', 'DELETE'].includes(route.method);
  const body = takesBody
    ? bodyValue(route).chain(encodeBody)
    : fc.oneof(w(12, fc.constant({ mutation: 'none' } as Encoded)), w(1, bodyValue(route).chain(encodeBody)));
  return fc
    .record({
      params,
      query: queryString(route),
      body,
      auth: route.public ? fc.oneof(AUTH, fc.constant({ header: undefined, valid: false })) : AUTH,
      contentType: CONTENT_TYPES,
      method: fc.oneof(w(15, fc.constant(route.method)), w(1, fc.constantFrom(...OTHER_METHODS))),
      idempotency: fc.option(idempotencyKey, { freq: 4, nil: undefined }),
      accept: fc.option(fc.constantFrom('text/html', '*/*', 'application/xml', 'image/png'), {
        freq: 6,
        nil: undefined,
      }),
    })
    .map(({ params: segs, query, body: enc, auth, contentType, method, idempotency, accept }) => {
      const f = fixtures();
      let i = 0;
      const path = route.url.replace(/:(\w+)/g, () => {
        const seg = segs[i++]!;
        return 'ref' in seg ? encodeURIComponent(f[seg.ref]) : seg.raw;
      });
      const headers: Record<string, string> = {};
      if (auth.header !== undefined) headers.authorization = auth.header;
      const sendsBody = enc.body !== undefined && method !== 'HEAD' && method !== 'GET';
      if (sendsBody && contentType !== undefined) headers['content-type'] = contentType;
      if (idempotency !== undefined && method === 'POST') headers['idempotency-key'] = idempotency;
      if (accept !== undefined) headers.accept = accept;
      return {
        label: `${route.method} ${route.url} body:${enc.mutation}`,
        method,
        path: path + query,
        headers,
        body: sendsBody ? enc.body : undefined,
        sent: sendsBody && contentType?.toLowerCase().startsWith('application/json') ? enc.sent : undefined,
        route: method === route.method ? route : undefined,
        validToken: auth.valid,
      } satisfies FuzzRequest;
    });
}

/** Requests to paths no route serves. */
export const unknownPathRequest: fc.Arbitrary<FuzzRequest> = fc
  .record({
    path: fc.oneof(
      fc.constantFrom(
        '/',
        '/api',
        '/api/v1',
        '/api/v2/app',
        '/api/v1/app/x/y/z/w',
        '/api/v1/app//endpoint',
        '//api/v1/app',
        '/api/v1/app/%2e%2e/%2e%2e/health',
        '/API/V1/APP',
        '/api/v1/app;x=1',
        '/.env',
        '/admin',
        '/docs/../openapi.json',
        `/${'a'.repeat(3_000)}`,
        '/health/ready/x',
        '/%00',
        '/%FF',
      ),
      fc
        .array(fc.constantFrom(...HOSTILE_SEGMENTS.slice(0, 30)), { minLength: 1, maxLength: 5 })
        .map((s) => `/api/v1/${s.join('/')}`),
    ),
    method: fc.constantFrom(...OTHER_METHODS),
    auth: AUTH,
  })
  .map(
    ({ path, method, auth }): FuzzRequest => ({
      label: 'unknown path',
      method,
      path,
      headers: auth.header === undefined ? {} : { authorization: auth.header },
      validToken: auth.valid,
    }),
  );

// ---------------------------------------------------------------------------------------------
// Raw HTTP (what undici refuses to send)

const CRLF = '\r\n';
const head = (lines: string[]) => lines.join(CRLF) + CRLF + CRLF;
const auth = `Authorization: Bearer ${TOKEN}`;

export interface RawRequest {
  label: string;
  bytes: Buffer;
  /** The client closes its side right after sending (a body cut short). */
  halfClose?: boolean;
}

const injected = fc.constantFrom(
  'a\rb',
  'a\nb',
  'a\r\nX-Injected: 1',
  'a\u0000b',
  'a\u0001b',
  'a\u007fb',
  '\r\n\r\nGET / HTTP/1.1',
);

export const rawRequest: fc.Arbitrary<RawRequest> = fc.oneof(
  // CR, LF, NUL and other controls in header values (idempotency-key, authorization, content-type…)
  fc
    .tuple(fc.constantFrom('Idempotency-Key', 'Authorization', 'Content-Type', 'X-Any', 'Accept'), injected)
    .map(([name, value]) => ({
      label: `control char in ${name}`,
      bytes: Buffer.from(
        head([
          'POST /api/v1/app HTTP/1.1',
          'Host: x',
          auth,
          'Content-Type: application/json',
          `${name}: ${value}`,
          'Content-Length: 12',
          'Connection: close',
        ]) + '{"name":"x"}',
        'latin1',
      ),
    })),
  // Bad header names
  fc.constantFrom('X Bad', 'X\u0000Bad', 'X(Bad)', ' X-Leading', 'X-É', '').map((name) => ({
    label: `bad header name ${JSON.stringify(name)}`,
    bytes: Buffer.from(
      head(['GET /api/v1/app HTTP/1.1', 'Host: x', auth, `${name}: v`, 'Connection: close']),
      'latin1',
    ),
  })),
  // Methods that are not tokens, unknown ones, lower case, CONNECT
  fc
    .constantFrom('FOO', 'get', 'GE T', 'G\u0000ET', 'CONNECT', 'BREW', 'M-SEARCH', 'PRI', '')
    .map((method) => ({
      label: `method ${JSON.stringify(method)}`,
      bytes: Buffer.from(
        head([`${method} /api/v1/app HTTP/1.1`, 'Host: x', auth, 'Connection: close']),
        'latin1',
      ),
    })),
  // Request targets and versions
  fc
    .constantFrom(
      'GET api/v1/app HTTP/1.1',
      'GET * HTTP/1.1',
      'OPTIONS * HTTP/1.1',
      'GET http://evil.example/api/v1/app HTTP/1.1',
      'GET /api/v1/app HTTP/2.0',
      'GET /api/v1/app HTTP/1.2',
      'GET /api/v1/app HTTP/0.9',
      'GET /api/v1/app',
      'GET /api/v1/app\u0000 HTTP/1.1',
      'GET /api/v1/app/\u00ff HTTP/1.1',
      'GET /api/v1/app/a b HTTP/1.1',
      `GET /${'a'.repeat(20_000)} HTTP/1.1`,
      'GET /api/v1/app?x=\u0001 HTTP/1.1',
    )
    .map((line) => ({
      label: `request line ${JSON.stringify(line.slice(0, 60))}`,
      bytes: Buffer.from(head([line, 'Host: x', auth, 'Connection: close']), 'latin1'),
    })),
  // Oversized headers (431), many headers
  fc.constantFrom(17_000, 70_000).map((n) => ({
    label: `header of ${n} bytes`,
    bytes: Buffer.from(
      head(['GET /api/v1/app HTTP/1.1', 'Host: x', auth, `X-Big: ${'b'.repeat(n)}`, 'Connection: close']),
    ),
  })),
  fc.constantFrom(200, 2_000).map((n) => ({
    label: `${n} headers`,
    bytes: Buffer.from(
      head([
        'GET /api/v1/app HTTP/1.1',
        'Host: x',
        auth,
        ...Array.from({ length: n }, (_, i) => `X-H${i}: v`),
        'Connection: close',
      ]),
    ),
  })),
  // Framing: duplicate or bad Content-Length, CL + TE (smuggling), bad chunks, bare LF, obs-fold
  fc
    .constantFrom(
      ['Content-Length: 12', 'Content-Length: 13'],
      ['Content-Length: 12, 12'],
      ['Content-Length: -1'],
      ['Content-Length: 1e3'],
      ['Content-Length: 99999999999999999999'],
      ['Content-Length: 12', 'Transfer-Encoding: chunked'],
      ['Transfer-Encoding: chunked, identity'],
      ['Transfer-Encoding: xchunked'],
      ['Transfer-Encoding: chunked', 'Transfer-Encoding: chunked'],
    )
    .map((framing) => ({
      label: `framing ${framing.join(' / ')}`,
      bytes: Buffer.from(
        head(['POST /api/v1/app HTTP/1.1', 'Host: x', auth, 'Content-Type: application/json', ...framing]) +
          '{"name":"x"}' +
          head(['GET /api/v1/app HTTP/1.1', 'Host: x', auth, 'Connection: close']),
      ),
    })),
  fc.constantFrom('zz', '-1', 'FFFFFFFFFFFFFFFF', '5;ext=\u0000', '').map((size) => ({
    label: `chunk size ${JSON.stringify(size)}`,
    // A chunk of 2^64 bytes is a body cut short: the server rightly waits for the rest until the client leaves.
    halfClose: size === 'FFFFFFFFFFFFFFFF',
    bytes: Buffer.from(
      head([
        'POST /api/v1/app HTTP/1.1',
        'Host: x',
        auth,
        'Content-Type: application/json',
        'Transfer-Encoding: chunked',
        'Connection: close',
      ]) + `${size}\r\n{"name":"x"}\r\n0\r\n\r\n`,
      'latin1',
    ),
  })),
  fc.constant({
    label: 'bare LF line endings',
    bytes: Buffer.from(`GET /api/v1/app HTTP/1.1\nHost: x\n${auth}\nConnection: close\n\n`),
  }),
  fc.constant({
    label: 'obs-fold header continuation',
    bytes: Buffer.from(
      head(['GET /api/v1/app HTTP/1.1', 'Host: x', auth, 'X-Folded: a', ' b', 'Connection: close']),
    ),
  }),
  // Valid framing, hostile body bytes (overlong UTF-8 and friends), sent as raw bytes
  fc.constantFrom(...INVALID_UTF8).map((bytes) => {
    const body = Buffer.concat([Buffer.from('{"name":"'), bytes, Buffer.from('"}')]);
    return {
      label: `raw invalid UTF-8 ${bytes.toString('hex')}`,
      bytes: Buffer.concat([
        Buffer.from(
          head([
            'POST /api/v1/app HTTP/1.1',
            'Host: x',
            auth,
            'Content-Type: application/json',
            `Content-Length: ${body.length}`,
            'Connection: close',
          ]),
        ),
        body,
      ]),
    };
  }),
  // Latin-1 (obs-text) bytes in an idempotency key are legal HTTP: the key must still work.
  fc.constantFrom(Buffer.from([0xff, 0xfe]), Buffer.from([0xe9]), Buffer.from('é')).map((key) => ({
    label: `obs-text idempotency key ${key.toString('hex')}`,
    bytes: Buffer.concat([
      Buffer.from(
        `POST /api/v1/app HTTP/1.1\r\nHost: x\r\n${auth}\r\nContent-Type: application/json\r\nIdempotency-Key: `,
      ),
      key,
      Buffer.from('\r\nContent-Length: 18\r\nConnection: close\r\n\r\n{"name":"obs-key"}'),
    ]),
  })),
  fc.constant({
    label: 'body shorter than Content-Length, then half-close',
    halfClose: true,
    bytes: Buffer.from(
      head([
        'POST /api/v1/app HTTP/1.1',
        'Host: x',
        auth,
        'Content-Type: application/json',
        'Content-Length: 100',
      ]) + '{"name":',
    ),
  }),
);

export { w as weighted };
