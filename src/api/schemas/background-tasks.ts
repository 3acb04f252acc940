import { type TProperties, Type } from 'typebox';
import { BACKGROUND_TASK_STATUSES } from '../../store/repos/background-tasks.ts';
import { StringEnum, Timestamp } from './common.ts';

/**
 * Svix's answer to a task it runs in the background (RecoverOut, AppUsageStatsOut, …), with the
 * answer's own fields; Courier finishes the task before answering.
 */
export const TaskOut = <const T extends string, P extends TProperties = Record<never, never>>(
  task: T,
  title: string,
  extra?: P,
) =>
  Type.Object(
    {
      id: Type.String({
        description:
          'The task (qtask_…), finished before the answer; GET /background-task/{id} reads it back.',
      }),
      status: StringEnum(BACKGROUND_TASK_STATUSES),
      task: Type.Literal(task),
      updatedAt: Timestamp,
      ...(extra ?? ({} as P)),
    },
    { title },
  );
