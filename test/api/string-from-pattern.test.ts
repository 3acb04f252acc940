import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { stringFromPattern } from '../../src/api/string-from-pattern.ts';

const matches = (pattern: string, text: string | undefined) =>
  text !== undefined && new RegExp(pattern, 'u').test(text);

const valid = (pattern: string) => {
  try {
    new RegExp(pattern, 'u');
    return true;
  } catch {
    return false;
  }
};

describe('stringFromPattern', () => {
  it('makes strings the patterns of webhook payloads match', () => {
    for (const pattern of [
      '^inv_[0-9]+$',
      '^[A-Z]{3}-\\d{4}$',
      '^\\w+@\\w+\\.com$',
      '^(?<year>\\d{4})-(?:0[1-9]|1[0-2])$',
      '^#[0-9a-fA-F]{6}$',
      '^\\$\\d+(\\.\\d{2})?$',
      '^[^a-z]+$',
      '^[\\]\\-]+$',
      '^\\u0041\\x42\\u{43}$',
      'a\\$',
      'foo|bar',
      '^$',
    ]) {
      expect(matches(pattern, stringFromPattern(pattern, 0, 100, 1000)), pattern).toBe(true);
    }
    expect(stringFromPattern('^[A-Z]{3}-\\d{4}$', 0, 100, 1000)).toBe('AAA-0000');
  });

  it('meets the length bounds: padding an unanchored end, repeating between anchors', () => {
    expect(stringFromPattern('abc', 6, 10, 1000)).toBe('abcxxx');
    expect(stringFromPattern('abc$', 6, 10, 1000)).toBe('xxxabc');
    expect(stringFromPattern('^(ab)*c$', 6, 10, 1000)).toBe('abababc');
    expect(stringFromPattern('^a{2,5}$', 4, 5, 1000)).toBe('aaaa');
    // What it cannot meet: nothing.
    expect(stringFromPattern('^a$', 2, 5, 1000)).toBeUndefined();
    expect(stringFromPattern('^a{6}$', 0, 5, 1000)).toBeUndefined();
    expect(stringFromPattern('^a{100000000}$', 0, Number.POSITIVE_INFINITY, 1000)).toBeUndefined();
  });

  it('makes nothing of what it does not read, rather than a string the pattern refuses', () => {
    for (const pattern of [
      '(?=a)b',
      '(?<!a)b',
      '\\bword',
      '(a)\\1',
      '\\k<x>',
      '^\\p{L}+$',
      'a^b',
      '^a|b$',
      'a{3,1}',
      '(a',
      'a)',
      '*a',
      '[a',
      '\\',
    ])
      expect(stringFromPattern(pattern, 0, 100, 1000), pattern).toBeUndefined();
  });

  it('stays within its limit for hostile patterns, and gives up on astral characters and deep nesting', () => {
    // Each item within the limit, all of them far past it: nothing is built.
    expect(
      stringFromPattern('a{1048576}'.repeat(500), 0, Number.POSITIVE_INFINITY, 1_048_576),
    ).toBeUndefined();
    expect(stringFromPattern('^\u0100*b$', 5e8, Number.POSITIVE_INFINITY, 1_048_576)).toBeUndefined();
    expect(stringFromPattern('a', 1e9, Number.POSITIVE_INFINITY, 1_048_576)).toBeUndefined();
    // A surrogate pair is one character to /u and one to minLength: not this subset.
    for (const pattern of ['😀{2}', '[😀]', '\\uD83D\\uDE00{2}', '\\u{1F600}'])
      expect(stringFromPattern(pattern, 0, 10, 1000), pattern).toBeUndefined();
    const deep = `${'('.repeat(3000)}a${')'.repeat(3000)}`;
    expect(stringFromPattern(deep, 0, 10, 1000)).toBeUndefined();
    expect(stringFromPattern(`${'('.repeat(64)}a${')'.repeat(64)}`, 0, 10, 1000)).toBe('a');
  });

  it('matches every pattern of its subset made at random, and never throws on any text', () => {
    const chars = fc.constantFrom(
      'a',
      'Z',
      '5',
      '_',
      '-',
      ' ',
      '.',
      '\\d',
      '\\w',
      '\\s',
      '\\D',
      '\\W',
      '\\S',
      '\\.',
      '\\$',
      '\\u0041',
      '\\x7e',
    );
    const charClass = fc
      .tuple(
        fc.boolean(),
        fc.array(fc.constantFrom('a-z', 'A-F', '0-9', '_', '\\d', '\\s', '.', '\\]', '-'), {
          minLength: 1,
          maxLength: 3,
        }),
      )
      .map(([neg, items]) => `[${neg ? '^' : ''}${items.join('')}]`);
    const quantifier = fc.constantFrom('', '*', '+', '?', '{2}', '{1,3}', '{0,}', '+?');
    // Groups unquantified: V8 can backtrack for minutes on quantified groups of quantified atoms
    // (which is why stringFromPattern never runs a pattern), and this test runs them.
    const { pattern } = fc.letrec((tie) => ({
      piece: fc.oneof(
        { depthSize: 'small', maxDepth: 3 },
        fc.tuple(fc.oneof(chars, charClass), quantifier).map(([a, q]) => `${a}${q}`),
        fc.tuple(fc.constantFrom('(', '(?:'), tie('alt')).map(([open, inner]) => `${open}${inner})`),
      ),
      seq: fc.array(tie('piece'), { minLength: 1, maxLength: 4 }).map((p) => p.join('')),
      alt: fc.array(tie('seq'), { minLength: 1, maxLength: 3 }).map((s) => s.join('|')),
      pattern: fc
        .tuple(fc.boolean(), tie('seq'), fc.boolean())
        .map(([s, body, e]) => `${s ? '^' : ''}${body}${e ? '$' : ''}`),
    }));
    fc.assert(
      fc.property(pattern, fc.integer({ min: 0, max: 12 }), (p, min) => {
        fc.pre(valid(p)); // the generator can join a class escape into a range, which /u refuses
        const text = stringFromPattern(p, min, 64, 1000);
        if (text !== undefined) {
          expect(matches(p, text), `${p} → ${JSON.stringify(text)}`).toBe(true);
          expect(text.length).toBeGreaterThanOrEqual(min);
        }
      }),
      { numRuns: 3000, seed: 20261205 },
    );
    fc.assert(
      fc.property(fc.string({ maxLength: 40 }), (junk) => {
        const text = stringFromPattern(junk, 0, 64, 1000);
        expect(text === undefined || text.length <= 64).toBe(true);
      }),
      { numRuns: 3000, seed: 20261205 },
    );
  });
});
