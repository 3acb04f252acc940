import { Type } from 'typebox';
import { describe, expect, it } from 'vitest';
import { Nullable, Uid } from '../../src/api/schemas/common.ts';
import { compileValidator, validationItems } from '../../src/api/validation.ts';

const compile = (schema: object, httpPart: string) =>
  compileValidator({ schema, httpPart, method: 'POST', url: '/' }) as ((data: unknown) => boolean) & {
    errors: Parameters<typeof validationItems>[0];
  };

describe('validation', () => {
  const Body = Type.Object({
    name: Type.String({ minLength: 1 }),
    uid: Type.Optional(Nullable(Uid)),
    count: Type.Optional(Type.Integer({ minimum: 1 })),
    tags: Type.Optional(Type.Array(Type.String({ maxLength: 3 }))),
  });

  it('reports every field of a body, in Svix form, without coercing types', () => {
    const validate = compile(Body, 'body');
    expect(validate({ name: 'x', uid: null })).toBe(true);
    expect(validate({ name: 5, uid: 'app_nope', count: '3', tags: ['ok', 'toolong'] })).toBe(false);
    expect(validationItems(validate.errors, 'body')).toEqual([
      { loc: ['body', 'name'], msg: 'must be string', type: 'type_error' },
      { loc: ['body', 'uid'], msg: expect.stringContaining('id prefix'), type: 'value_error' },
      { loc: ['body', 'count'], msg: 'must be integer', type: 'type_error' },
      { loc: ['body', 'tags', '1'], msg: expect.stringContaining('3'), type: 'value_error' },
    ]);
    expect(validate({})).toBe(false);
    expect(validationItems(validate.errors, 'body')).toEqual([
      { loc: ['body', 'name'], msg: expect.any(String), type: 'value_error.missing' },
    ]);
  });

  it('coerces query strings and names the part', () => {
    const validate = compile(
      Type.Object({ limit: Type.Integer({ maximum: 250 }), flag: Type.Boolean() }),
      'querystring',
    );
    const query = { limit: '20', flag: 'true' };
    expect(validate(query)).toBe(true);
    expect(query).toEqual({ limit: 20, flag: true });
    expect(validate({ limit: '300', flag: 'maybe' })).toBe(false);
    expect(validationItems(validate.errors, 'querystring').map((i) => i.loc)).toEqual([
      ['query', 'limit'],
      ['query', 'flag'],
    ]);
  });

  it('names each field an object without additional properties does not know', () => {
    const Strict = Type.Object({
      policy: Type.Object({ tries: Type.Integer() }, { additionalProperties: false }),
    });
    const validate = compile(Strict, 'body');
    expect(validate({ policy: { tries: 1, retries: 3, 'a/b': 1 } })).toBe(false);
    expect(validationItems(validate.errors)).toEqual([
      { loc: ['body', 'policy', 'retries'], msg: 'is not a field here', type: 'value_error' },
      { loc: ['body', 'policy', 'a/b'], msg: 'is not a field here', type: 'value_error' },
    ]);
  });

  it('says "or null" for nullable fields', () => {
    const validate = compile(Type.Object({ n: Nullable(Type.Integer()) }), 'body');
    expect(validate({ n: 'x' })).toBe(false);
    expect(validationItems(validate.errors)[0]!.msg).toBe('must be integer or null');
  });
});
