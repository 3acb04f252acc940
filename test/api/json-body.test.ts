import { describe, expect, it } from 'vitest';
import { inexactNumber, MAX_NUMBER_LITERAL, parsedJsonProblem } from '../../src/api/json-checks.ts';

describe('inexactNumber: a literal a double would change', () => {
  it.each([
    '1234567890123456789', // a 64-bit id: sent as …800
    '-9007199254740993',
    '18446744073709551616', // 2^64 exactly, but printed back as …552000
    '123456789012345678',
    '0.10000000000000000001',
    '1234567.1234567891', // 17 digits split by the point: …892
    '12345678901234567890123e-5',
    '1e-400', // below the smallest double: 0
  ])('refuses %s', (literal) => {
    expect(inexactNumber(`{"n":[1,${literal}]}`)).toBe(literal);
  });

  it.each([
    '1',
    '9007199254740991',
    '1152921504606847000', // 2^60 as JavaScript prints it: printed back the same
    '0.1',
    '1.0',
    '-0',
    '1E+2',
    '1e300',
    '1e-320',
    '0.30000000000000004',
    '0.10000000000000001', // 0.1 with 17 digits (%.17g, PHP before 7.1): the same double
    '12345678.123456789',
    '4.9406564584124654e-324',
    '0.0000000000000000',
  ])('accepts %s', (literal) => {
    expect(inexactNumber(`{"n":[1,${literal}]}`)).toBeNull();
  });

  it('reads no number inside a string or a key, whatever its escapes', () => {
    expect(inexactNumber('{"s":"\\"1234567890123456789","k1234567890123456789":1}')).toBeNull();
  });

  it('refuses a number written longer than any double needs, unread (once a minute of work each)', () => {
    const literal = `0.1${'0'.repeat(1_000_000)}1`;
    expect(inexactNumber(`{"n":${literal}}`)).toBe(literal);
    expect(parsedJsonProblem(`{"n":${literal}}`, { n: 0.1 })).toBe(
      `Body contains a number written with ${literal.length} characters (at most ${MAX_NUMBER_LITERAL})`,
    );
    const trailing = `1.${'0'.repeat(MAX_NUMBER_LITERAL - 2)}`;
    expect(inexactNumber(`{"n":${trailing}}`)).toBeNull();
    expect(inexactNumber(`{"n":${trailing}0}`)).toBe(`${trailing}0`);
  });

  it('scans a string of millions of characters without running out of stack', () => {
    const body = `{"s":"${'x'.repeat(9_000_000)}","n":1234567890123456789}`;
    expect(inexactNumber(body)).toBe('1234567890123456789');
  });
});
