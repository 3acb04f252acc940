import { Type } from 'typebox';
import {
  BACKGROUND_TASK_KINDS,
  BACKGROUND_TASK_STATUSES,
  type BackgroundTask,
  findBackgroundTask,
  listBackgroundTasks,
} from '../../store/repos/background-tasks.ts';
import { notFound } from '../errors.ts';
import { idIterator, listQuery, paginate } from '../pagination.ts';
import { AnyObject, iso, ListResponse, StringEnum, Timestamp } from '../schemas/common.ts';
import type { Api, ApiDeps } from '../types.ts';

const tags = ['Background Task'];
const BASE = '/api/v1/background-task';

const BackgroundTaskOut = Type.Object(
  {
    id: Type.String(),
    status: StringEnum(BACKGROUND_TASK_STATUSES, {
      description: 'Always finished: Courier finishes a task before answering.',
    }),
    task: StringEnum(BACKGROUND_TASK_KINDS),
    data: AnyObject(
      'Courier: the application (appId), the endpoint (endpointId) and the deliveries scheduled (replayed) of a ' +
        'recover or replay; the figures of a statistics task (appStats, event_types).',
    ),
    updatedAt: Timestamp,
  },
  { title: 'BackgroundTaskOut' },
);

const backgroundTaskOut = (t: BackgroundTask) => ({
  id: t.id,
  status: t.status,
  task: t.task,
  data: t.data,
  updatedAt: iso(t.updatedAt),
});

/**
 * Svix's background tasks, read back: the recover, replay and purge tasks, which Courier runs before
 * it answers and keeps for the retention period (COURIER_RETENTION).
 */
export function backgroundTaskRoutes(app: Api, deps: ApiDeps): void {
  const { db } = deps;

  app.get(
    BASE,
    {
      schema: {
        tags,
        summary: 'List background tasks',
        description:
          'The recover, replay and payload purge tasks, newest first, filtered by status and task (any of ' +
          "Svix's task types; those Courier does not run match none).",
        querystring: Type.Object({
          ...listQuery(idIterator('qtask'), 'descending'),
          status: Type.Optional(StringEnum(BACKGROUND_TASK_STATUSES)),
          task: Type.Optional(StringEnum(BACKGROUND_TASK_KINDS)),
        }),
        response: { 200: ListResponse(BackgroundTaskOut, 'ListResponse_BackgroundTaskOut_') },
      },
    },
    async (request) => {
      const { status, task } = request.query;
      // An application's token lists its application's tasks alone.
      const principal = request.principal;
      const appId = principal?.kind === 'app' ? principal.appId : undefined;
      return paginate(
        request.query,
        'descending',
        (w) => listBackgroundTasks(db, { ...w, status, task, appId }),
        (t) => t.id,
        backgroundTaskOut,
      );
    },
  );

  app.get(
    `${BASE}/:task_id`,
    {
      schema: {
        tags,
        summary: 'Get a background task',
        params: Type.Object({ task_id: Type.String({ maxLength: 64 }) }),
        response: { 200: BackgroundTaskOut },
      },
    },
    async (request) => {
      const task = await findBackgroundTask(db, request.params.task_id);
      // An application's token reads its application's tasks alone; another's is not there for it.
      const principal = request.principal;
      const hidden = principal?.kind === 'app' && task?.data.appId !== principal.appId;
      if (!task || hidden) throw notFound(`Background task ${request.params.task_id} not found`);
      return backgroundTaskOut(task);
    },
  );
}
