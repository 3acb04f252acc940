/**
 * Svix list pagination: `limit` (default 50, at most 250: more is a 422, as in Svix), `iterator`
 * (the last item's id for the next page, or `-` + the first item's id for the previous one) and
 * `order`. Stores fetch limit + 1 rows to know whether the list is `done`.
 */
import { Type } from 'typebox';
import type { Page } from '../store/repos/applications.ts';
import { idPattern, type ListOf, StringEnum } from './schemas/common.ts';

export const MAX_LIMIT = 250;
export type Order = 'ascending' | 'descending';

/** An id iterator for ids with this prefix (ULID body); the schema refuses anything else with a 422. */
export const idIterator = (prefix: string) => `^-?${idPattern(prefix).slice(1)}`;

export function listQuery(iteratorPattern: string, defaultOrder: Order) {
  return {
    limit: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: MAX_LIMIT,
        default: 50,
        description: 'Items per page (at most 250).',
      }),
    ),
    iterator: Type.Optional(
      Type.String({
        pattern: iteratorPattern,
        description: 'The `iterator` (next page) or `prevIterator` (previous page) of the previous answer.',
      }),
    ),
    order: Type.Optional(
      StringEnum(['ascending', 'descending'] as const, { description: `Default: ${defaultOrder}.` }),
    ),
  };
}

export interface ListParams {
  limit?: number;
  iterator?: string;
  order?: Order;
}

/** The slice of a list a store function reads: keys strictly after/before, in one direction. */
export interface Window {
  limit: number;
  after?: string;
  before?: string;
  descending: boolean;
}

export async function paginate<T, O>(
  params: ListParams,
  defaultOrder: Order,
  fetch: (window: Window) => Promise<Page<T>>,
  keyOf: (item: T) => string,
  view: (item: T) => O,
): Promise<ListOf<O>> {
  const limit = params.limit ?? 50;
  const descending = (params.order ?? defaultOrder) === 'descending';
  const iterator = params.iterator;
  const backwards = iterator?.startsWith('-') ?? false;
  const key = backwards ? iterator!.slice(1) : iterator;

  let window: Window;
  if (!backwards) {
    window = {
      limit,
      descending,
      ...(key === undefined ? {} : descending ? { before: key } : { after: key }),
    };
  } else {
    // The page before `key`: read away from it in the opposite direction, then restore the order.
    window = { limit, descending: !descending, ...(descending ? { after: key } : { before: key }) };
  }
  const page = await fetch(window);
  const data = backwards ? [...page.data].reverse() : page.data;
  const first = data[0];
  const last = data[data.length - 1];
  return {
    data: data.map(view),
    iterator: last === undefined ? null : keyOf(last),
    prevIterator: first === undefined ? null : `-${keyOf(first)}`,
    done: page.done,
  };
}

/** Query of a list read oldest first only (no order, no prevIterator). */
export function forwardListQuery(iteratorPattern: string) {
  return {
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_LIMIT, default: 50 })),
    iterator: Type.Optional(
      Type.String({ pattern: iteratorPattern, description: "The previous answer's iterator." }),
    ),
  };
}

/** The answer of a forward-only list from its rows, read with limit + 1. */
export function forwardPage<T, O>(
  rows: T[],
  limit: number,
  keyOf: (item: T) => string,
  view: (item: T) => O,
): ListOf<O> {
  const data = rows.slice(0, limit);
  const last = data[data.length - 1];
  return {
    data: data.map(view),
    iterator: last === undefined ? null : keyOf(last),
    prevIterator: null,
    done: rows.length <= limit,
  };
}
