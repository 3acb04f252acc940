import { describe, expect, it } from 'vitest';
import { classify } from '../../src/policy/classify.ts';
import { streakEffect } from '../../src/policy/streak.ts';

const strict = { mode: 'strict' } as const;

describe('streakEffect', () => {
  it.each([
    [200, 'reset'],
    [204, 'reset'],
    [410, 'increment'],
    [401, 'increment'],
    [404, 'increment'],
    [500, 'unchanged'],
    [429, 'unchanged'],
    [302, 'unchanged'],
  ] as const)('HTTP %i → %s', (status, effect) => {
    expect(streakEffect(classify({ kind: 'response', status }, strict))).toBe(effect);
  });

  it('network failures leave the streak alone, SSRF refusals extend it', () => {
    expect(streakEffect(classify({ kind: 'network', failure: 'timeout' }, strict))).toBe('unchanged');
    expect(streakEffect(classify({ kind: 'refused', reason: 'loopback' }, strict))).toBe('increment');
  });

  it('lenient mode still counts the permanent class', () => {
    expect(streakEffect(classify({ kind: 'response', status: 410 }, { mode: 'lenient' }))).toBe('increment');
  });
});
