import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { Linger, needsSlotsBack } from '../../src/dispatch/completion-linger.ts';

describe('needsSlotsBack', () => {
  it('is true once this worker holds half the cap or more', () => {
    expect(needsSlotsBack(4, 10)).toBe(false);
    expect(needsSlotsBack(5, 10)).toBe(true);
    expect(needsSlotsBack(12, 10)).toBe(true);
    // Odd caps round up; a cap of one or two is always in need.
    expect(needsSlotsBack(2, 5)).toBe(false);
    expect(needsSlotsBack(3, 5)).toBe(true);
    expect(needsSlotsBack(1, 1)).toBe(true);
    expect(needsSlotsBack(1, 2)).toBe(true);
  });
});

describe('Linger', () => {
  beforeEach(() => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  const track = (p: Promise<void>) => {
    const state = { done: false };
    void p.then(() => {
      state.done = true;
    });
    return state;
  };

  it('ends after the time it was given', async () => {
    const linger = new Linger();
    const wait = track(linger.wait(10));
    await vi.advanceTimersByTimeAsync(9);
    expect(wait.done).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(wait.done).toBe(true);
  });

  it('ends sooner when hurried, at once for zero', async () => {
    const linger = new Linger();
    const first = track(linger.wait(10));
    await vi.advanceTimersByTimeAsync(1);
    linger.hurry(2);
    await vi.advanceTimersByTimeAsync(1);
    expect(first.done).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(first.done).toBe(true);

    const second = track(linger.wait(10));
    linger.hurry(0);
    await vi.advanceTimersByTimeAsync(0);
    expect(second.done).toBe(true);
  });

  it('never ends later for being hurried, and a hurry with nothing waiting does nothing', async () => {
    const linger = new Linger();
    linger.hurry(0);
    const wait = track(linger.wait(10));
    await vi.advanceTimersByTimeAsync(8);
    linger.hurry(5);
    await vi.advanceTimersByTimeAsync(2);
    expect(wait.done).toBe(true);
  });
});
