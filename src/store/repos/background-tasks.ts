import type { Queryable } from '../db.ts';
import { toDate, toMs } from '../rows.ts';
import type { Page } from './applications.ts';

/** Svix's task types; Courier records the recover, replay, purge and statistics ones, and lists by any. */
export const BACKGROUND_TASK_KINDS = [
  'endpoint.replay',
  'endpoint.recover',
  'application.stats',
  'message.broadcast',
  'sdk.generate',
  'event-type.aggregate',
  'application.purge_content',
  'endpoint.bulk-replay',
] as const;
export const BACKGROUND_TASK_STATUSES = ['running', 'finished', 'failed'] as const;
export type BackgroundTaskKind = (typeof BACKGROUND_TASK_KINDS)[number];
export type BackgroundTaskStatus = (typeof BACKGROUND_TASK_STATUSES)[number];

/** Svix's BackgroundTaskOut, as migration 0032 keeps it. */
export interface BackgroundTask {
  id: string;
  task: BackgroundTaskKind;
  status: BackgroundTaskStatus;
  data: Record<string, unknown>;
  updatedAt: number;
}

interface Row {
  id: string;
  task: BackgroundTaskKind;
  status: BackgroundTaskStatus;
  data: Record<string, unknown>;
  updated_at: Date;
}

const fromRow = (r: Row): BackgroundTask => ({
  id: r.id,
  task: r.task,
  status: r.status,
  data: r.data,
  updatedAt: toMs(r.updated_at)!,
});

export async function recordBackgroundTask(db: Queryable, task: BackgroundTask): Promise<void> {
  await db.query(
    'insert into courier_background_tasks (id, task, status, data, updated_at) values ($1, $2, $3, $4, $5)',
    [task.id, task.task, task.status, JSON.stringify(task.data), toDate(task.updatedAt)],
  );
}

export async function findBackgroundTask(db: Queryable, id: string): Promise<BackgroundTask | null> {
  const { rows } = await db.query<Row>('select * from courier_background_tasks where id = $1', [id]);
  return rows[0] ? fromRow(rows[0]) : null;
}

/** By id (their time); `after`/`before` are ids (the list's iterator). */
export async function listBackgroundTasks(
  db: Queryable,
  opts: {
    limit: number;
    after?: string;
    before?: string;
    descending: boolean;
    status?: BackgroundTaskStatus;
    task?: BackgroundTaskKind;
    /** Only the tasks of this application (their data's appId): unindexed, as tasks are few. */
    appId?: string;
  },
): Promise<Page<BackgroundTask>> {
  const { rows } = await db.query<Row>(
    `select * from courier_background_tasks
      where ($1::text is null or id > $1) and ($2::text is null or id < $2)
        and ($3::text is null or status = $3) and ($4::text is null or task = $4)
        and ($6::text is null or data->>'appId' = $6)
      order by id ${opts.descending ? 'desc' : 'asc'} limit $5`,
    [
      opts.after ?? null,
      opts.before ?? null,
      opts.status ?? null,
      opts.task ?? null,
      opts.limit + 1,
      opts.appId ?? null,
    ],
  );
  return { data: rows.slice(0, opts.limit).map(fromRow), done: rows.length <= opts.limit };
}

/** Deletes up to `limit` tasks with ids below `before` (older than the retention cutoff); returns how many. */
export async function purgeBackgroundTasks(db: Queryable, before: string, limit: number): Promise<number> {
  const { rowCount } = await db.query(
    `delete from courier_background_tasks
      where id in (select id from courier_background_tasks where id < $1 order by id limit $2)`,
    [before, limit],
  );
  return rowCount;
}
