import { afterEach, describe, expect, it, vi } from 'vitest';
import { DeadlineSweeper, type Expiring } from '../../src/delivery/deadlines.ts';

function item(deadline: number, expired: string[], name: string): Expiring {
  return { deadline, expire: () => expired.push(name) };
}

describe('DeadlineSweeper', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('expires items whose deadline passed, oldest first, and only those', () => {
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval', 'performance'] });
    const sweeper = new DeadlineSweeper(1000); // ticks every 50 ms
    const expired: string[] = [];
    const t0 = performance.now();
    sweeper.add(item(t0 + 1000, expired, 'a'));
    vi.advanceTimersByTime(100);
    sweeper.add(item(t0 + 1100, expired, 'b'));
    const c = item(t0 + 1100, expired, 'c');
    sweeper.add(c);
    sweeper.delete(c); // settled before its deadline
    vi.advanceTimersByTime(850);
    expect(expired).toEqual([]);
    vi.advanceTimersByTime(100);
    expect(expired).toEqual(['a']);
    vi.advanceTimersByTime(100);
    expect(expired).toEqual(['a', 'b']);
    expect(vi.getTimerCount()).toBe(0); // idle: the shared timer stops
  });

  it('starts ticking again when work arrives after going idle', () => {
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval', 'performance'] });
    const sweeper = new DeadlineSweeper(100);
    const expired: string[] = [];
    sweeper.add(item(performance.now() + 100, expired, 'first'));
    vi.advanceTimersByTime(200);
    expect(vi.getTimerCount()).toBe(0);
    sweeper.add(item(performance.now() + 100, expired, 'second'));
    expect(vi.getTimerCount()).toBe(1);
    vi.advanceTimersByTime(200);
    expect(expired).toEqual(['first', 'second']);
  });
});
