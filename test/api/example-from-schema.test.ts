import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { exampleFromSchema } from '../../src/api/example-from-schema.ts';

const NOW = Date.UTC(2026, 11, 5, 12, 30, 15, 250);
const MAX = 1024 * 1024;
const ajv = addFormats.default(new Ajv2020({ strict: false }));
const errorsOf = (schema: object, value: unknown) => {
  const check = ajv.compile(schema);
  return check(value) ? null : check.errors;
};
/** The value made, or the problem said. */
const made = (schema: unknown, maxBytes = MAX) => {
  const result = exampleFromSchema(schema, NOW, maxBytes);
  return 'value' in result ? result.value : { problem: result.problem };
};

describe('exampleFromSchema', () => {
  it('makes a payload that its schema accepts, every property included, at the given time', () => {
    const schema = {
      type: 'object',
      required: ['id', 'customer', 'lines', 'status', 'paidAt'],
      properties: {
        id: { type: 'string', minLength: 3 },
        status: { enum: ['paid', 'void'] },
        paidAt: { type: 'string', format: 'date-time' },
        due: { type: 'string', format: 'date' },
        amount: { type: 'integer', minimum: 1, multipleOf: 5 },
        fee: { type: 'number', exclusiveMinimum: 0.5, maximum: 10 },
        refund: { type: 'number', maximum: -3 },
        currency: { type: 'string', minLength: 3, maxLength: 3 },
        note: { type: ['string', 'null'] },
        tags: { type: 'array', items: { type: 'string' }, minItems: 2 },
        pair: { type: 'array', prefixItems: [{ type: 'integer' }, { type: 'boolean' }] },
        customer: { $ref: '#/$defs/customer' },
        lines: { type: 'array', items: { $ref: '#/$defs/line' } },
        extended: {
          allOf: [
            { $ref: '#/$defs/customer' },
            { properties: { vip: { type: 'boolean' } } },
            { required: ['vip'] },
          ],
        },
        payment: { oneOf: [{ type: 'object', properties: { card: { type: 'string', format: 'uuid' } } }] },
        anything: {},
      },
      $defs: {
        customer: {
          type: 'object',
          required: ['email'],
          properties: { email: { type: 'string', format: 'email' }, site: { type: 'string', format: 'uri' } },
        },
        line: {
          type: 'object',
          properties: { sku: { type: 'string' }, quantity: { type: 'integer', minimum: 1 } },
        },
      },
    };
    const example = made(schema);
    expect(example).toEqual({
      id: 'string',
      status: 'paid',
      paidAt: '2026-12-05T12:30:15.250Z',
      due: '2026-12-05',
      amount: 5,
      fee: 1.5,
      refund: -3,
      currency: 'str',
      note: 'string',
      tags: ['string', 'string'],
      pair: [0, true],
      customer: { email: 'user@example.com', site: 'https://example.com/' },
      lines: [{ sku: 'string', quantity: 1 }],
      extended: { email: 'user@example.com', site: 'https://example.com/', vip: true },
      payment: { card: '00000000-0000-4000-8000-000000000000' },
      anything: null,
    });
    expect(errorsOf(schema, example)).toBeNull();
  });

  it("takes what the schema offers first: const, examples, OpenAPI's example, default, enum", () => {
    const offers: Record<string, unknown> = {
      const: 'from const',
      examples: ['from examples'],
      example: 'from example',
      default: 'from default',
      enum: ['from enum'],
      type: 'string',
    };
    const values = [];
    for (const key of ['const', 'examples', 'example', 'default', 'enum', 'type']) {
      values.push(made({ type: 'object', properties: { v: offers } }));
      delete offers[key];
    }
    expect(values.map((m) => (m as { v: unknown }).v)).toEqual([
      'from const',
      'from examples',
      'from example',
      'from default',
      'from enum',
      'string',
    ]);
  });

  it('applies the keywords beside anyOf, oneOf and $ref, and folds allOf parts of constraints only', () => {
    const either = {
      type: 'object',
      properties: { a: { type: 'string' }, b: { type: 'integer', minimum: 2 } },
      anyOf: [{ required: ['a'] }, { required: ['b'] }],
    };
    expect(made(either)).toEqual({ a: 'string', b: 2 });
    expect(errorsOf(either, made(either))).toBeNull();
    const narrowed = { $ref: '#/$defs/n', minimum: 7, $defs: { n: { type: 'integer' } } };
    expect(made(narrowed)).toBe(7);
    const parts = {
      allOf: [
        { $ref: '#/$defs/a' },
        { $ref: '#/$defs/b' },
        { required: ['b'] },
        { properties: { a: { maxLength: 3 } } },
      ],
      $defs: {
        a: { type: 'object', properties: { a: { type: 'string' } } },
        b: { properties: { b: { type: 'boolean' } } },
      },
    };
    expect(made(parts)).toEqual({ a: 'str', b: true });
    expect(errorsOf(parts, made(parts))).toBeNull();
  });

  it('keeps numbers, strings and arrays within their bounds', () => {
    const cases: [object, unknown][] = [
      [{ type: 'number', exclusiveMinimum: 0, exclusiveMaximum: 1 }, 0.5],
      [{ type: 'number', minimum: 0, exclusiveMaximum: 0.5 }, 0],
      [{ type: 'integer', maximum: -0.5 }, -1],
      [{ type: 'integer', minimum: 2.5 }, 3],
      [{ type: 'integer', exclusiveMinimum: 5 }, 6],
      [{ type: 'number', minimum: 0.3, multipleOf: 0.1 }, 0.3],
      [{ type: 'integer', minimum: 7, maximum: 9, multipleOf: 4 }, 8],
      [{ type: 'string', maxLength: 0 }, ''],
      [{ type: 'string', minLength: 10 }, 'stringxxxx'],
      [{ type: 'array', items: { type: 'integer' }, maxItems: 0 }, []],
      [{ type: 'array', items: { type: 'integer' }, uniqueItems: true }, [0]],
    ];
    for (const [schema, expected] of cases) {
      expect(made(schema), JSON.stringify(schema)).toEqual(expected);
      if (!String(expected).includes('0.3'))
        expect(errorsOf(schema, expected), JSON.stringify(schema)).toBeNull();
    }
    // Draft 4's (OpenAPI 3.0's) boolean exclusive bounds.
    expect(made({ type: 'integer', minimum: 5, exclusiveMinimum: true })).toBe(6);
    expect(made({ type: 'number', maximum: 0, exclusiveMaximum: true })).toBe(-1);
    // No number fits.
    expect(
      made({
        type: 'object',
        required: ['n'],
        properties: { n: { type: 'integer', minimum: 1, maximum: 0 } },
      }),
    ).toEqual({ problem: 'the schema admits no value that can be made' });
  });

  it('stops at a reference back into itself, leaving an optional property out', () => {
    const tree = {
      type: 'object',
      required: ['name'],
      properties: {
        name: { type: 'string' },
        parent: { $ref: '#' },
        children: { type: 'array', items: { $ref: '#' } },
      },
    };
    expect(made(tree)).toEqual({ name: 'string', children: [] });
    expect(errorsOf(tree, made(tree))).toBeNull();
    // Required all the way down, it has no finite value.
    expect(made({ ...tree, required: ['parent'] })).toEqual({
      problem: 'the schema admits no value that can be made',
    });
    expect(
      made({ $ref: '#/$defs/a', $defs: { a: { $ref: '#/$defs/b' }, b: { $ref: '#/$defs/a' } } }),
    ).toEqual({
      problem: 'the schema admits no value that can be made',
    });
  });

  it('reads keys as keys, and makes nothing of references it cannot follow', () => {
    const keys = {
      type: 'object',
      required: ['__proto__'],
      properties: {
        ['__proto__']: { type: 'string', format: 'constructor' },
        bad: { $ref: '#/%E0%A4%A' },
        inherited: { $ref: '#/__proto__' },
        anchor: { $ref: '#here' },
        remote: { $ref: 'https://example.com/schema.json' },
        missing: { $ref: '#/$defs/missing' },
        slash: { $ref: '#/$defs/a~1b' },
        tilde: { $ref: '#/$defs/c~0d' },
        never: false,
        color: { type: 'color' },
      },
      $defs: { 'a/b': { const: 'slash' }, 'c~d': { const: 'tilde' } },
    };
    const example = made(keys) as Record<string, unknown>;
    expect(Object.keys(example)).toEqual(['__proto__', 'slash', 'tilde']);
    expect(Object.getOwnPropertyDescriptor(example, '__proto__')?.value).toBe('string');
    expect(JSON.stringify(example)).toBe('{"__proto__":"string","slash":"slash","tilde":"tilde"}');
    expect(made({ oneOf: [false, { type: 'integer' }] })).toBe(0);
    expect(made('not a schema')).toEqual({ problem: 'the schema admits no value that can be made' });
  });

  it('is bounded in work: long reference chains to large schemas, fanned out', () => {
    const junk = Object.fromEntries(Array.from({ length: 20_000 }, (_, i) => [`x${i}`, i]));
    const $defs: Record<string, unknown> = { c0: { ...junk, $ref: '#/$defs/c1' } };
    for (let i = 1; i < 31; i++) $defs[`c${i}`] = { $ref: `#/$defs/c${i + 1}` };
    $defs.c31 = { type: 'string' };
    const properties = Object.fromEntries(
      Array.from({ length: 10 }, (_, i) => [`p${i}`, { $ref: '#/$defs/c0' }]),
    );
    expect(made({ type: 'object', properties, $defs })).toEqual({
      problem: 'the schema takes too much work to make an example from',
    });
  });

  it('is bounded in work and nesting where allOf, oneOf and required multiply (each a 500 or a stall before)', () => {
    const refs = (n: number, ref: string) => Array.from({ length: n }, () => ({ $ref: ref }));
    const tooMuch = { problem: 'the schema takes too much work to make an example from' };
    // An option that is itself: the refs of an option are a cycle like any.
    expect(
      made({ oneOf: [{ $ref: '#/$defs/a' }], $defs: { a: { oneOf: [{ $ref: '#/$defs/a' }] } } }),
    ).toEqual({
      problem: 'the schema admits no value that can be made',
    });
    // A property shared by 5,000 parts: each merge wraps it once more.
    expect(
      made({
        properties: { x: {} },
        allOf: refs(5000, '#/$defs/d'),
        $defs: { d: { properties: { x: {} } } },
      }),
    ).toHaveProperty('problem');
    // allOf within allOf through references, deeper than any payload schema.
    const chain: Record<string, unknown> = { a100: { type: 'object' } };
    for (let i = 0; i < 100; i++) chain[`a${i}`] = { allOf: [{ $ref: `#/$defs/a${i + 1}` }] };
    expect(made({ $ref: '#/$defs/a0', $defs: chain })).toEqual({
      problem: 'the schema nests allOf too deeply to make an example from',
    });
    // Long required lists merged again and again, and empty parts by the thousand.
    const names = Array.from({ length: 20_000 }, (_, i) => `n${i}`);
    expect(made({ required: [], allOf: refs(100, '#/r'), r: { required: names } })).toEqual(tooMuch);
    expect(
      made({ allOf: refs(20, '#/e'), e: { allOf: Array.from({ length: 50_000 }, () => ({})) } }),
    ).toEqual(tooMuch);
  });

  it('fills what properties do not describe: required names and minProperties, from additionalProperties', () => {
    const map = {
      type: 'object',
      required: ['id'],
      properties: { name: { type: 'string' } },
      additionalProperties: { type: 'integer', minimum: 1 },
      minProperties: 3,
    };
    expect(made(map)).toEqual({ name: 'string', id: 1, key1: 1 });
    expect(errorsOf(map, made(map))).toBeNull();
    expect(made({ type: 'object', required: ['id'] })).toEqual({ id: null });
    expect(made({ type: 'object', required: ['id'], additionalProperties: false })).toEqual({
      problem: 'the schema admits no value that can be made',
    });
  });

  it("prefers an option that is not null, and knows OpenAPI's byte format", () => {
    const schema = {
      anyOf: [{ type: 'null' }, { type: 'object', properties: { data: { type: 'string', format: 'byte' } } }],
    };
    expect(made(schema)).toEqual({ data: 'c3RyaW5n' });
    expect(errorsOf(schema, made(schema))).toBeNull();
  });

  it('is bounded in size: a large value repeated by reference, or a long string asked for', () => {
    const big = 'x'.repeat(100_000);
    const properties = Object.fromEntries(
      Array.from({ length: 99 }, (_, i) => [`p${i}`, { $ref: '#/$defs/big' }]),
    );
    const fanned = { type: 'object', properties, $defs: { big: { const: big } } };
    expect(made(fanned, 64 * 1024)).toEqual({
      problem: 'the example made from the schema would exceed 65536 bytes',
    });
    expect(
      made({ type: 'object', properties: { s: { type: 'string', minLength: 1e12 } } }, 64 * 1024),
    ).toEqual({
      problem: 'the example made from the schema would exceed 65536 bytes',
    });
    expect(made({ type: 'array', items: { type: 'integer' }, minItems: 1e12 }, 64 * 1024)).toHaveProperty(
      'problem',
    );
  });

  it('makes strings their patterns match, and formats only within their length bounds', () => {
    const schema = {
      type: 'object',
      properties: {
        invoice: { type: 'string', pattern: '^inv_[0-9]{6}$' },
        currency: { type: 'string', pattern: '^[A-Z]{3}$' },
        reference: { type: 'string', pattern: 'ref-\\d+', minLength: 12 },
        short: { type: 'string', format: 'date-time', maxLength: 10 },
        // A pattern it does not read: a string within the other bounds, as before.
        tricky: { type: 'string', pattern: '^(?=x)x+$', maxLength: 3 },
      },
    };
    const value = made(schema) as Record<string, string>;
    expect(value).toMatchObject({ invoice: 'inv_000000', currency: 'AAA', reference: 'ref-0xxxxxxx' });
    // maxLength asserts; a format (2020-12) annotates unless a validator is told to assert it.
    expect(value.short!.length).toBeLessThanOrEqual(10);
    const { tricky, short, ...checked } = value;
    expect(tricky!.length).toBeLessThanOrEqual(3);
    const { invoice, currency, reference } = schema.properties;
    expect(errorsOf({ type: 'object', properties: { invoice, currency, reference } }, checked)).toBeNull();
  });

  it('never throws, and keeps within its size, on schemas made at random', () => {
    const names = ['a', 'b', '__proto__', 'constructor'];
    const refs = ['#', '#/$defs/a', '#/$defs/b', '#/properties/a', '#/%E0', '#/$defs/a/allOf/0', 'x'];
    const { schema } = fc.letrec((tie) => ({
      schema: fc.oneof(
        { depthSize: 'small', withCrossShrink: true },
        fc.boolean(),
        fc.record(
          {
            type: fc.constantFrom('object', 'array', 'string', 'integer', 'number', 'boolean', 'null', 'x', [
              'string',
              'null',
            ]),
            $ref: fc.constantFrom(...refs),
            properties: fc.dictionary(fc.constantFrom(...names), tie('schema'), { maxKeys: 3 }),
            required: fc.array(fc.constantFrom(...names), { maxLength: 3 }),
            items: tie('schema'),
            prefixItems: fc.array(tie('schema'), { maxLength: 2 }),
            allOf: fc.array(tie('schema'), { maxLength: 3 }),
            oneOf: fc.array(tie('schema'), { maxLength: 3 }),
            anyOf: fc.array(tie('schema'), { maxLength: 2 }),
            additionalProperties: tie('schema'),
            minimum: fc.double(),
            exclusiveMaximum: fc.oneof(fc.boolean(), fc.double()),
            multipleOf: fc.double(),
            minLength: fc.integer({ min: -5, max: 1e9 }),
            maxLength: fc.integer({ min: -5, max: 50 }),
            minItems: fc.integer({ min: 0, max: 1e9 }),
            minProperties: fc.integer({ min: 0, max: 1e6 }),
            uniqueItems: fc.boolean(),
            const: fc.jsonValue({ maxDepth: 2 }),
            format: fc.constantFrom('date-time', 'byte', 'constructor', 'email'),
            pattern: fc.constantFrom('^[a-z]+$', '^(a|b){2,}\\d$', '(?=x)', 'x{99999999}', '[', '^a$'),
          },
          { requiredKeys: [] },
        ),
      ),
    }));
    const root = fc.record({ $defs: fc.record({ a: schema, b: schema }) }, { requiredKeys: [] });
    fc.assert(
      fc.property(schema, root, (s, r) => {
        const document = typeof s === 'boolean' ? s : { ...r, ...s };
        const result = exampleFromSchema(document, NOW, 4096);
        if ('value' in result)
          expect((JSON.stringify(result.value) ?? '').length).toBeLessThanOrEqual(4096 * 2);
        else expect(result.problem).toMatch(/^the (schema|example)/);
      }),
      { numRuns: 3000, seed: 20261205 },
    );
  });
});
