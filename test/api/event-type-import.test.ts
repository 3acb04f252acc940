import { describe, expect, it } from 'vitest';
import { ApiError } from '../../src/api/errors.ts';
import { eventTypesFromOpenApi, parseSpecRaw } from '../../src/api/event-type-import.ts';

const refused = (spec: unknown): string => {
  try {
    eventTypesFromOpenApi(spec);
  } catch (error) {
    expect(error).toBeInstanceOf(ApiError);
    expect(error).toMatchObject({ statusCode: 400, code: 'invalid_spec' });
    return (error as ApiError).message;
  }
  throw new Error('not refused');
};

const webhook = (operation: Record<string, unknown>) => ({ post: operation });
const jsonBody = (media: Record<string, unknown>) => ({ content: { 'application/json': media } });

describe('event types from an OpenAPI document', () => {
  it('names each webhook by its key, described by its operation, with its JSON body schema as version 1', () => {
    const spec = {
      openapi: '3.1.0',
      webhooks: {
        'invoice.paid': webhook({
          summary: 'Paid',
          description: 'An invoice was paid',
          'x-svix-group-name': 'invoices',
          requestBody: jsonBody({ schema: { type: 'object', properties: { id: { type: 'string' } } } }),
        }),
        'invoice.voided': {
          summary: 'From the path item',
          post: {
            deprecated: true,
            'x-svix-feature-flag': 'beta',
            'x-svix-feature-flags': ['beta', 'early'],
            requestBody: { content: { 'text/plain': {} } },
          },
        },
      },
    };
    expect(eventTypesFromOpenApi(spec)).toEqual([
      {
        name: 'invoice.paid',
        description: 'An invoice was paid',
        deprecated: false,
        schemas: { '1': { type: 'object', properties: { id: { type: 'string' } } } },
        featureFlag: null,
        featureFlags: null,
        groupName: 'invoices',
      },
      {
        name: 'invoice.voided',
        description: 'From the path item',
        deprecated: true,
        schemas: null,
        featureFlag: 'beta',
        featureFlags: ['beta', 'early'],
        groupName: null,
      },
    ]);
  });

  it('keeps x-svix-feature-flags, else x-svix-feature-flag, once each, and refuses a flag no token could hold', () => {
    const flagsOf = (operation: Record<string, unknown>) =>
      eventTypesFromOpenApi({ webhooks: { 'a.b': webhook(operation) } })[0]!.featureFlags;
    expect(flagsOf({ 'x-svix-feature-flag': ' beta ' })).toEqual(['beta']);
    expect(flagsOf({ 'x-svix-feature-flag': 'beta', 'x-svix-feature-flags': [] })).toEqual(['beta']);
    expect(flagsOf({ 'x-svix-feature-flags': ['early', 'beta', 'early'] })).toEqual(['early', 'beta']);
    expect(flagsOf({ 'x-svix-feature-flags': null })).toBeNull();
    expect(flagsOf({})).toBeNull();
    expect(() => flagsOf({ 'x-svix-feature-flags': ['ok', 'not ok'] })).toThrow(
      `Webhook a.b's feature flag "not ok" is not a feature flag name (^[a-zA-Z0-9-_.]{1,256}$)`,
    );
    expect(() => flagsOf({ 'x-svix-feature-flags': [7] })).toThrow(ApiError);
    const many = Array.from({ length: 101 }, (_, i) => `f${i}`);
    expect(flagsOf({ 'x-svix-feature-flags': many.slice(0, 100) })).toHaveLength(100);
    expect(() => flagsOf({ 'x-svix-feature-flags': many })).toThrow(
      'Webhook a.b has more than 100 feature flags',
    );
    // The answer's featureFlag is the first of those kept, as an event type shows it.
    const [both] = eventTypesFromOpenApi({
      webhooks: { 'a.b': webhook({ 'x-svix-feature-flag': 'older', 'x-svix-feature-flags': ['beta'] }) },
    });
    expect([both!.featureFlag, both!.featureFlags]).toEqual(['beta', ['beta']]);
    expect(() => flagsOf({ 'x-svix-feature-flags': 'beta' })).toThrow(
      "Webhook a.b's x-svix-feature-flags is not a list",
    );
  });

  it('reads x-webhooks (OpenAPI 3.0) and media types ending in +json', () => {
    const [type] = eventTypesFromOpenApi({
      'x-webhooks': {
        'user.created': webhook({
          summary: 'A user signed up',
          requestBody: { content: { 'application/cloudevents+json': { schema: { type: 'object' } } } },
        }),
      },
    });
    expect(type).toMatchObject({
      name: 'user.created',
      description: 'A user signed up',
      schemas: { '1': { type: 'object' } },
    });
  });

  it('inlines local references, keeps a recursive one as any value, and moves the body examples into the schema', () => {
    const spec = {
      webhooks: {
        'tree.grown': { $ref: '#/components/pathItems/Grown' },
      },
      components: {
        pathItems: { Grown: webhook({ requestBody: { $ref: '#/components/requestBodies/Tree' } }) },
        requestBodies: {
          Tree: jsonBody({
            schema: { $ref: '#/components/schemas/Node' },
            example: { name: 'root' },
            examples: { leaf: { value: { name: 'leaf' } }, shared: { $ref: '#/components/examples/Shared' } },
          }),
        },
        examples: { Shared: { value: { name: 'shared' } } },
        schemas: {
          Node: {
            type: 'object',
            properties: {
              name: { $ref: '#/components/schemas/Name' },
              children: { type: 'array', items: { $ref: '#/components/schemas/Node' } },
            },
          },
          'Name~/x': { type: 'string' },
          Name: { $ref: '#/components/schemas/Name~0~1x' },
        },
      },
    };
    expect(eventTypesFromOpenApi(spec)[0]!.schemas).toEqual({
      '1': {
        type: 'object',
        properties: {
          name: { type: 'string' },
          children: { type: 'array', items: { description: 'recursive: #/components/schemas/Node' } },
        },
        examples: [{ name: 'root' }, { name: 'leaf' }, { name: 'shared' }],
      },
    });
    // A schema with examples of its own keeps them.
    const own = eventTypesFromOpenApi({
      webhooks: {
        a: webhook({ requestBody: jsonBody({ schema: { examples: [{ n: 1 }] }, example: { n: 2 } }) }),
      },
    });
    expect(own[0]!.schemas).toEqual({ '1': { examples: [{ n: 1 }] } });
  });

  it('refuses what it cannot import, saying why', () => {
    expect(refused([])).toMatch(/must be an object/);
    expect(refused({ openapi: '3.1.0', paths: {} })).toMatch(/has no webhooks/);
    expect(refused({ webhooks: { 'bad name!': webhook({}) } })).toMatch(/not an event type name/);
    expect(refused({ webhooks: { a: { summary: 'no operation' } } })).toMatch(/has no operation/);
    expect(
      refused({ webhooks: { a: webhook({ requestBody: jsonBody({ schema: { $ref: 'other.yaml#/X' } }) }) } }),
    ).toMatch(/not local/);
    expect(
      refused({
        webhooks: { a: webhook({ requestBody: jsonBody({ schema: { $ref: '#/components/schemas/X' } }) }) },
      }),
    ).toMatch(/names nothing/);
    expect(refused({ webhooks: { a: { $ref: '#/webhooks/a' } } })).toMatch(/refers to itself/);
    // References that multiply (each level names the next twice) cannot blow the server up.
    const schemas: Record<string, unknown> = { L0: { type: 'string' } };
    for (let i = 1; i <= 30; i++) {
      schemas[`L${i}`] = {
        allOf: [{ $ref: `#/components/schemas/L${i - 1}` }, { $ref: `#/components/schemas/L${i - 1}` }],
      };
    }
    expect(
      refused({
        webhooks: { a: webhook({ requestBody: jsonBody({ schema: { $ref: '#/components/schemas/L30' } }) }) },
        components: { schemas },
      }),
    ).toMatch(/too large/);
    // …nor can one long string reached many times.
    const big: Record<string, unknown> = { B0: { description: 'x'.repeat(500_000) } };
    for (let i = 1; i <= 4; i++) {
      big[`B${i}`] = {
        allOf: [{ $ref: `#/components/schemas/B${i - 1}` }, { $ref: `#/components/schemas/B${i - 1}` }],
      };
    }
    const bigRef = { $ref: '#/components/schemas/B4' };
    expect(
      refused({
        webhooks: { a: webhook({ requestBody: jsonBody({ schema: bigRef }) }) },
        components: { schemas: big },
      }),
    ).toMatch(/too large/);
    // A long chain of references is as deep as long nesting; so is one of path items.
    const chain: Record<string, unknown> = { C0: { type: 'string' } };
    for (let i = 1; i <= 5000; i++) chain[`C${i}`] = { $ref: `#/components/schemas/C${i - 1}` };
    const chainRef = { $ref: '#/components/schemas/C5000' };
    expect(
      refused({
        webhooks: { a: webhook({ requestBody: jsonBody({ schema: chainRef }) }) },
        components: { schemas: chain },
      }),
    ).toMatch(/deeper than 128 levels/);
    const items: Record<string, unknown> = { P0: webhook({}) };
    for (let i = 1; i <= 100; i++) items[`P${i}`] = { $ref: `#/components/pathItems/P${i - 1}` };
    expect(
      refused({ webhooks: { a: { $ref: '#/components/pathItems/P100' } }, components: { pathItems: items } }),
    ).toMatch(/chain too long/);
    expect(
      refused({
        webhooks: { a: webhook({ requestBody: jsonBody({ schema: { $ref: '#/components/%E0' } }) }) },
        components: {},
      }),
    ).toMatch(/not a well-formed JSON pointer/);
    // What PostgreSQL cannot store, and more than one import takes.
    expect(refused({ webhooks: { a: webhook({ description: 'a\u0000b' }) } })).toMatch(/NUL character/);
    expect(refused({ webhooks: { a: webhook({ description: 'x'.repeat(4097) }) } })).toMatch(
      /longer than 4096/,
    );
    const many = Object.fromEntries(Array.from({ length: 1001 }, (_, i) => [`e${i}`, webhook({})]));
    expect(refused({ webhooks: many })).toMatch(/more than 1000 webhooks/);
    // Only the operation taken is read: a broken one beside it does not matter.
    expect(
      eventTypesFromOpenApi({ webhooks: { a: { post: { summary: 'ok' }, get: { $ref: '#/nowhere' } } } })[0]!
        .description,
    ).toBe('ok');
    // A reference may name an array's item.
    const fromArray = eventTypesFromOpenApi({
      webhooks: { a: webhook({ requestBody: jsonBody({ schema: { $ref: '#/components/list/1' } }) }) },
      components: { list: [{ type: 'null' }, { type: 'number' }] },
    });
    expect(fromArray[0]!.schemas).toEqual({ '1': { type: 'number' } });
  });

  it('parses YAML or JSON text, and says where it fails', () => {
    const yaml = `
openapi: 3.1.0
webhooks:
  order.shipped:
    post:
      summary: An order left
`;
    expect(eventTypesFromOpenApi(parseSpecRaw(yaml))[0]).toMatchObject({
      name: 'order.shipped',
      description: 'An order left',
    });
    expect(parseSpecRaw('{"webhooks": {}}')).toEqual({ webhooks: {} });
    expect(() => parseSpecRaw('webhooks: [unclosed')).toThrow(/specRaw is neither YAML nor JSON/);
    // YAML can say what JSON cannot: a circular alias, a NUL, an infinite number, a lone surrogate.
    const circular = 'webhooks:\n  a:\n    post:\n      requestBody: &s {content: {x: *s}}\n';
    expect(refused(parseSpecRaw(circular))).toMatch(/nested deeper than 128 levels/);
    expect(refused(parseSpecRaw('webhooks:\n  a:\n    post: {summary: "a\\0b"}\n'))).toMatch(/NUL character/);
    expect(refused(parseSpecRaw('webhooks:\n  a:\n    post: {x-n: .inf}\n'))).toMatch(/number out of range/);
    expect(refused(parseSpecRaw('webhooks:\n  a:\n    post: {summary: "\\uD800"}\n'))).toMatch(
      /lone UTF-16 surrogate/,
    );
    // Aliases that multiply are cut short by the parser.
    const laughs = ['a: &a [x, x, x, x, x, x, x, x, x, x]'];
    for (let i = 1; i < 10; i++)
      laughs.push(
        `l${i}: &l${i} [${Array(10)
          .fill(i === 1 ? '*a' : `*l${i - 1}`)
          .join(', ')}]`,
      );
    expect(() => parseSpecRaw(laughs.join('\n'))).toThrow(/specRaw is neither YAML nor JSON/);
  });
});
