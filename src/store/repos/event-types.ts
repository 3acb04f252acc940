import { isDeepStrictEqual } from 'node:util';
import type { Queryable } from '../db.ts';
import { toDate, toMs } from '../rows.ts';
import type { Page } from './applications.ts';

export interface EventType {
  name: string;
  description: string;
  archived: boolean;
  deprecated: boolean;
  schemas: Record<string, unknown> | null;
  /** Shown to an application's token only when it holds one of them; null: to every token. */
  featureFlags: string[] | null;
  createdAt: number;
  updatedAt: number;
}

export interface EventTypeFields {
  description: string;
  archived: boolean;
  deprecated: boolean;
  schemas: Record<string, unknown> | null;
  featureFlags: string[] | null;
}

interface Row {
  name: string;
  description: string;
  archived: boolean;
  deprecated: boolean;
  schemas: Record<string, unknown> | null;
  feature_flags: string[] | null;
  created_at: Date;
  updated_at: Date;
}

const fromRow = (r: Row): EventType => ({
  name: r.name,
  description: r.description,
  archived: r.archived,
  deprecated: r.deprecated,
  schemas: r.schemas,
  featureFlags: r.feature_flags,
  createdAt: toMs(r.created_at)!,
  updatedAt: toMs(r.updated_at)!,
});

const json = (v: unknown) => (v === null || v === undefined ? null : JSON.stringify(v));

/** Whether a token holding `flags` sees the event type; undefined flags: the admin token, who sees all. */
export function shownTo(type: EventType, flags: readonly string[] | undefined): boolean {
  return !flags || !type.featureFlags || type.featureFlags.some((f) => flags.includes(f));
}

/** `lock`: held until the transaction ends, so that a change computed from it loses no concurrent one. */
export async function findEventType(db: Queryable, name: string, lock = false): Promise<EventType | null> {
  const { rows } = await db.query<Row>(
    `select * from courier_event_types where name = $1${lock ? ' for update' : ''}`,
    [name],
  );
  return rows[0] ? fromRow(rows[0]) : null;
}

const values = (f: EventTypeFields) => [
  f.description,
  f.archived,
  f.deprecated,
  json(f.schemas),
  f.featureFlags,
];

/** Creates the event type; null when one of that name already exists. */
export async function createEventType(
  db: Queryable,
  name: string,
  fields: EventTypeFields,
  now: number,
): Promise<EventType | null> {
  const { rows } = await db.query<Row>(
    `insert into courier_event_types (name, description, archived, deprecated, schemas, feature_flags, created_at, updated_at)
     values ($1, $2, $3, $4, $5, $6, $7, $7) on conflict (name) do nothing returning *`,
    [name, ...values(fields), toDate(now)],
  );
  return rows[0] ? fromRow(rows[0]) : null;
}

export async function updateEventType(
  db: Queryable,
  name: string,
  fields: EventTypeFields,
  now: number,
): Promise<EventType | null> {
  const { rows } = await db.query<Row>(
    `update courier_event_types
        set description = $2, archived = $3, deprecated = $4, schemas = $5, feature_flags = $6, updated_at = $7
      where name = $1 returning *`,
    [name, ...values(fields), toDate(now)],
  );
  return rows[0] ? fromRow(rows[0]) : null;
}

/** Removes the event type for good (Svix's `expunge`); archiving is an update. */
export async function deleteEventType(db: Queryable, name: string): Promise<boolean> {
  const { rowCount } = await db.query('delete from courier_event_types where name = $1', [name]);
  return rowCount > 0;
}

/** By name; `after`/`before` are names (the list's iterator); `flags`: those a token sees (see shownTo). */
export async function listEventTypes(
  db: Queryable,
  opts: {
    limit: number;
    after?: string;
    before?: string;
    descending?: boolean;
    includeArchived: boolean;
    flags?: readonly string[];
  },
): Promise<Page<EventType>> {
  const { rows } = await db.query<Row>(
    `select * from courier_event_types
      where ($1::text is null or name > $1) and ($2::text is null or name < $2) and ($3 or not archived)
        and ($5::text[] is null or feature_flags is null or feature_flags && $5)
      order by name ${opts.descending ? 'desc' : 'asc'} limit $4`,
    [opts.after ?? null, opts.before ?? null, opts.includeArchived, opts.limit + 1, opts.flags ?? null],
  );
  return { data: rows.slice(0, opts.limit).map(fromRow), done: rows.length <= opts.limit };
}

/** Which of `names` are event types a token holding `flags` sees (see shownTo), archived ones left out. */
export async function shownEventTypeNames(
  db: Queryable,
  names: readonly string[],
  flags: readonly string[],
): Promise<Set<string>> {
  const { rows } = await db.query<{ name: string }>(
    `select name from courier_event_types
      where name = any($1::text[]) and not archived and (feature_flags is null or feature_flags && $2)`,
    [names, flags],
  );
  return new Set(rows.map((r) => r.name));
}

/**
 * The event types not in `keep` and not archived: archived (an import's replaceAll), or with
 * `dryRun` only named. Returns their names, sorted.
 */
export async function archiveEventTypesExcept(
  db: Queryable,
  keep: readonly string[],
  now: number,
  dryRun: boolean,
): Promise<string[]> {
  const { rows } = dryRun
    ? await db.query<{ name: string }>(
        'select name from courier_event_types where not archived and name <> all($1::text[]) order by name',
        [keep],
      )
    : await db.query<{ name: string }>(
        `update courier_event_types set archived = true, updated_at = $2
          where not archived and name <> all($1::text[]) returning name`,
        [keep, toDate(now)],
      );
  return rows.map((r) => r.name).sort();
}

const sorted = (flags: string[] | null) => (flags ? [...flags].sort() : null);

const unchanged = (current: EventType, fields: EventTypeFields) =>
  current.description === fields.description &&
  current.archived === fields.archived &&
  current.deprecated === fields.deprecated &&
  isDeepStrictEqual(current.schemas, fields.schemas) &&
  isDeepStrictEqual(sorted(current.featureFlags), sorted(fields.featureFlags));

/**
 * Creates or updates each event type as given (an import); call inside a transaction. Returns the
 * names of those that were new or differed; with `dryRun`, only says (and takes no lock). Written
 * in name order, so that two imports at once lock the rows they share in the same order.
 */
export async function writeEventTypes(
  tx: Queryable,
  types: readonly { name: string; fields: EventTypeFields }[],
  now: number,
  dryRun: boolean,
): Promise<string[]> {
  const changed: string[] = [];
  const byName = [...types].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  for (const { name, fields } of byName) {
    const current = await findEventType(tx, name, !dryRun);
    if (current && unchanged(current, fields)) continue;
    changed.push(name);
    if (dryRun) continue;
    // Made by a concurrent create since the lookup: updated, as an existing one.
    if (current || !(await createEventType(tx, name, fields, now)))
      await updateEventType(tx, name, fields, now);
  }
  return changed;
}

/** Every event type, archived ones too, by name (an environment export: a few hundred at most). */
export async function allEventTypes(db: Queryable): Promise<EventType[]> {
  const { rows } = await db.query<Row>('select * from courier_event_types order by name');
  return rows.map(fromRow);
}
