import type { FastifyBaseLogger } from 'fastify';
import type { Clock } from '../clock.ts';
import { newId } from '../ids.ts';
import type { Queryable } from '../store/db.ts';
import { type BackgroundTaskKind, recordBackgroundTask } from '../store/repos/background-tasks.ts';
import { iso } from './schemas/common.ts';

/**
 * Svix's answer to a task it runs in the background, for one Courier has done before answering;
 * the task is kept to be read back (GET /background-task/{id}). Not keeping it is logged, not
 * answered: the work is done, and a 5xx would make the SDK, which retries one, do it again.
 */
export async function finishedTask<T extends BackgroundTaskKind>(
  deps: { db: Queryable; clock: Clock },
  log: FastifyBaseLogger,
  task: T,
  data: Record<string, unknown>,
) {
  const now = deps.clock.now();
  const id = newId('qtask', now);
  try {
    await recordBackgroundTask(deps.db, { id, task, status: 'finished', data, updatedAt: now });
  } catch (error) {
    log.warn({ err: error, taskId: id, task }, 'task done but not kept: reading it back will answer 404');
  }
  return { id, status: 'finished' as const, task, updatedAt: iso(now) };
}
