import { describe, expect, it } from 'vitest';
import { CoalescedReads } from '../../src/store/coalesced-reads.ts';

/** A read function whose reads the test answers one by one: each read's keys, in order. */
function scriptedReads() {
  const reads: Array<{ keys: string[]; answer(values: Record<string, number>): void; fail(e: Error): void }> =
    [];
  const read = (keys: string[]) =>
    new Promise<Map<string, number>>((resolve, reject) => {
      reads.push({
        keys,
        answer: (values) => resolve(new Map(Object.entries(values))),
        fail: reject,
      });
    });
  return { reads, read };
}

const settled = () => new Promise((resolve) => setImmediate(resolve));

describe('coalesced reads', () => {
  it('read at once when idle, and put the keys asked for meanwhile in one next read, each once', async () => {
    const { reads, read } = scriptedReads();
    const lookups = new CoalescedReads(read, 100);
    const first = lookups.get('a');
    expect(reads.map((r) => r.keys)).toEqual([['a']]);
    const waiting = [lookups.get('b'), lookups.get('a'), lookups.get('b'), lookups.get('c')];
    await settled();
    expect(reads).toHaveLength(1);

    reads[0]!.answer({ a: 1 });
    expect(await first).toBe(1);
    await settled();
    // `a` again: asked for while the first read was under way, which may not have seen a commit made meanwhile.
    expect(reads.map((r) => r.keys)).toEqual([['a'], ['b', 'a', 'c']]);
    reads[1]!.answer({ a: 2, b: 3 });
    expect(await Promise.all(waiting)).toEqual([3, 2, 3, undefined]);
    await settled();
    expect(reads).toHaveLength(2);
  });

  it('read at most maxKeys at a time, the rest in the reads after', async () => {
    const { reads, read } = scriptedReads();
    const lookups = new CoalescedReads(read, 2);
    const all = ['a', 'b', 'c', 'd', 'e', 'f'].map((key) => lookups.get(key));
    for (const expected of [['a'], ['b', 'c'], ['d', 'e'], ['f']]) {
      await settled();
      expect(reads.at(-1)!.keys).toEqual(expected);
      reads.at(-1)!.answer(Object.fromEntries(expected.map((key) => [key, key.charCodeAt(0)])));
    }
    expect(await Promise.all(all)).toEqual([97, 98, 99, 100, 101, 102]);
  });

  it('fail the callers of a read that throws at once, and go on with the next read', async () => {
    let calls = 0;
    const lookups = new CoalescedReads<number>((keys) => {
      calls++;
      if (calls === 1) throw new Error('bad statement');
      return Promise.resolve(new Map(keys.map((key) => [key, key.length])));
    }, 100);
    await expect(lookups.get('a')).rejects.toThrow('bad statement');
    expect(await lookups.get('bb')).toBe(2);
  });

  it('fail the callers of a failed read alone, and go on with the next read', async () => {
    const { reads, read } = scriptedReads();
    const lookups = new CoalescedReads(read, 100);
    const failed = lookups.get('a');
    const next = [lookups.get('a'), lookups.get('b')];
    reads[0]!.fail(new Error('connection lost'));
    await expect(failed).rejects.toThrow('connection lost');
    await settled();
    expect(reads.map((r) => r.keys)).toEqual([['a'], ['a', 'b']]);
    reads[1]!.answer({ a: 6, b: 7 });
    expect(await Promise.all(next)).toEqual([6, 7]);
  });
});
