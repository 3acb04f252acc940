import { describe, expect, it } from 'vitest';
import { paginate, type Window } from '../../src/api/pagination.ts';

/** A store of ids 'a'..'j' answering windows the way the repos do (limit + 1 rows). */
const IDS = 'abcdefghij'.split('');
async function store(w: Window) {
  let rows = IDS.filter(
    (id) => (w.after === undefined || id > w.after) && (w.before === undefined || id < w.before),
  );
  if (w.descending) rows = rows.reverse();
  const page = rows.slice(0, w.limit + 1);
  return { data: page.slice(0, w.limit), done: page.length <= w.limit };
}
const list = (params: { limit?: number; iterator?: string; order?: 'ascending' | 'descending' }) =>
  paginate(
    params,
    'ascending',
    store,
    (x) => x,
    (x) => x,
  );

describe('paginate', () => {
  it('reads forward from the iterator and reports done', async () => {
    expect(await list({ limit: 3 })).toEqual({
      data: ['a', 'b', 'c'],
      iterator: 'c',
      prevIterator: '-a',
      done: false,
    });
    expect(await list({ limit: 3, iterator: 'c' })).toMatchObject({ data: ['d', 'e', 'f'], done: false });
    expect(await list({ limit: 3, iterator: 'i' })).toEqual({
      data: ['j'],
      iterator: 'j',
      prevIterator: '-j',
      done: true,
    });
    expect(await list({ limit: 3, iterator: 'j' })).toEqual({
      data: [],
      iterator: null,
      prevIterator: null,
      done: true,
    });
  });

  it('reads the page before a prevIterator, in the list order', async () => {
    expect(await list({ limit: 3, iterator: '-g' })).toMatchObject({ data: ['d', 'e', 'f'], done: false });
    expect(await list({ limit: 3, iterator: '-c' })).toMatchObject({ data: ['a', 'b'], done: true });
    expect(await list({ limit: 3, iterator: '-d', order: 'descending' })).toMatchObject({
      data: ['g', 'f', 'e'],
      done: false,
    });
  });

  it('defaults to 50 items and the given order', async () => {
    expect((await list({})).data).toEqual(IDS);
    expect((await list({ order: 'descending', limit: 2 })).data).toEqual(['j', 'i']);
    expect((await list({ order: 'descending', limit: 2, iterator: 'i' })).data).toEqual(['h', 'g']);
    const desc = await paginate(
      {},
      'descending',
      store,
      (x) => x,
      (x) => x.toUpperCase(),
    );
    expect(desc.data[0]).toBe('J');
  });
});
