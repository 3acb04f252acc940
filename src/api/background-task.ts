import type { FastifyBaseLogger } from 'fastify';
import type { Clock } from '../clock.ts';
import { TASK_FINISHED } from '../dispatch/operator-webhook.ts';
import { newId } from '../ids.ts';
import type { Database } from '../store/db.ts';
import { type BackgroundTaskKind, recordBackgroundTask } from '../store/repos/background-tasks.ts';
import { recordApiEvent } from './endpoint-events.ts';
import { iso } from './schemas/common.ts';

/** The task data a background_task.finished event carries (larger: null). */
const EVENT_DATA_MAX_CHARS = 4096;
const small = (data: Record<string, unknown>) => JSON.stringify(data).length <= EVENT_DATA_MAX_CHARS;

/**
 * Svix's answer to a task it runs in the background, for one Courier has done before answering;
 * the task is kept to be read back (GET /background-task/{id}). Not keeping a task that changed
 * something is logged, not answered: the work is done, and a 5xx would make the SDK, which
 * retries one, do it again. A task that only reads (`readOnly`: statistics, whose figures are
 * its data) fails with it instead: a retry costs nothing, and an answer would point at nothing.
 * With the task, Svix's `background_task.finished` operational event is recorded.
 */
export async function finishedTask<T extends BackgroundTaskKind>(
  deps: { db: Database; clock: Clock },
  log: FastifyBaseLogger,
  task: T,
  data: Record<string, unknown>,
  { readOnly = false } = {},
) {
  const now = deps.clock.now();
  const id = newId('qtask', now);
  try {
    await deps.db.transaction(async (tx) => {
      await recordBackgroundTask(tx, { id, task, status: 'finished', data, updatedAt: now });
      const event = {
        id: newId('opev', now),
        type: TASK_FINISHED,
        appId: typeof data.appId === 'string' ? data.appId : null,
        endpointId: typeof data.endpointId === 'string' ? data.endpointId : null,
        // Figures (statistics of every application) would make a notice of megabytes: read them
        // back with GET /background-task/{id}.
        data: { taskId: id, status: 'finished', task, data: small(data) ? data : null },
        createdAt: now,
      };
      await recordApiEvent(tx, event);
    });
  } catch (error) {
    if (readOnly) throw error;
    log.warn({ err: error, taskId: id, task }, 'task done but not kept: reading it back will answer 404');
  }
  return { id, status: 'finished' as const, task, updatedAt: iso(now) };
}
