import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { describe, expect, it } from 'vitest';
import { exampleFromSchema } from '../../src/api/example-from-schema.ts';

const NOW = Date.UTC(2026, 11, 5, 12, 30, 15, 250);
const ajv = addFormats.default(new Ajv2020({ strict: false }));
const valid = (schema: object, value: unknown) => {
  const check = ajv.compile(schema);
  const ok = check(value);
  return ok ? true : check.errors;
};

describe('exampleFromSchema', () => {
  it('makes a payload that its schema accepts, every property included, at the given time', () => {
    const schema = {
      type: 'object',
      required: ['id', 'customer', 'lines', 'status', 'paidAt'],
      properties: {
        id: { type: 'string', pattern: '^in_', minLength: 3 },
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
          allOf: [{ $ref: '#/$defs/customer' }, { type: 'object', properties: { vip: { type: 'boolean' } } }],
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
    const example = exampleFromSchema(schema, NOW);
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
    // The pattern is not honoured (a value for any pattern is not made up): all else is valid.
    const { id: _id, ...rest } = example as Record<string, unknown>;
    const { id: _idSchema, ...otherProperties } = schema.properties;
    expect(valid({ ...schema, required: ['customer'], properties: otherProperties }, rest)).toBe(true);
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
    const made = [];
    for (const key of ['const', 'examples', 'example', 'default', 'enum', 'type']) {
      made.push(exampleFromSchema({ type: 'object', properties: { v: offers } }, NOW));
      delete offers[key];
    }
    expect(made.map((m) => (m as { v: unknown }).v)).toEqual([
      'from const',
      'from examples',
      'from example',
      'from default',
      'from enum',
      'string',
    ]);
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
    const example = exampleFromSchema(tree, NOW);
    expect(example).toEqual({ name: 'string', children: [] });
    expect(valid(tree, example)).toBe(true);
    // Required all the way down, it has no finite value.
    expect(exampleFromSchema({ ...tree, required: ['parent'] }, NOW)).toBeUndefined();
    // References that only name one another.
    expect(
      exampleFromSchema(
        { $ref: '#/$defs/a', $defs: { a: { $ref: '#/$defs/b' }, b: { $ref: '#/$defs/a' } } },
        NOW,
      ),
    ).toBeUndefined();
  });

  it('makes nothing of what it cannot read', () => {
    expect(exampleFromSchema({ $ref: 'https://example.com/schema.json' }, NOW)).toBeUndefined();
    expect(exampleFromSchema({ $ref: '#/$defs/missing' }, NOW)).toBeUndefined();
    expect(
      exampleFromSchema({ type: 'object', required: ['a'], properties: { a: false } }, NOW),
    ).toBeUndefined();
    expect(exampleFromSchema({ type: 'object', properties: { a: { type: 'color' } } }, NOW)).toEqual({});
    expect(exampleFromSchema({ oneOf: [false, { type: 'integer' }] }, NOW)).toBe(0);
    expect(exampleFromSchema('not a schema', NOW)).toBeUndefined();
  });

  it('is bounded: a schema that multiplies by reference gives a partial value', () => {
    // Each level names the next 20 times: 20^6 values written out.
    const $defs: Record<string, unknown> = { l6: { type: 'string' } };
    for (let level = 5; level >= 0; level--) {
      const properties = Object.fromEntries(
        Array.from({ length: 20 }, (_, i) => [`p${i}`, { $ref: `#/$defs/l${level + 1}` }]),
      );
      $defs[`l${level}`] = { type: 'object', properties };
    }
    const example = exampleFromSchema({ $ref: '#/$defs/l0', $defs }, NOW);
    expect(JSON.stringify(example).length).toBeLessThan(1_000_000);
    expect(example).toHaveProperty('p0.p0.p0.p0.p0.p0', 'string');
  });
});
