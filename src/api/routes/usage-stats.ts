import { Type } from 'typebox';
import { appUsage, eventTypeUsage, resolveApplications } from '../../store/repos/usage-stats.ts';
import { finishedTask } from '../background-task.ts';
import { fieldError } from '../errors.ts';
import { IdOrUid, Nullable, StringEnum, Timestamp } from '../schemas/common.ts';
import type { Api, ApiDeps } from '../types.ts';

const tags = ['Statistics'];
/** Applications one request may name; without a list it covers them all. */
const MAX_APP_IDS = 1000;

const AppUsageStatsIn = Type.Object(
  {
    since: Timestamp,
    until: Timestamp,
    appIds: Type.Optional(
      Nullable(
        Type.Array(IdOrUid('An application id or uid.'), {
          maxItems: MAX_APP_IDS,
          description: 'These applications only, each listed (zeros too); without, every one with usage.',
        }),
      ),
    ),
  },
  { title: 'AppUsageStatsIn' },
);

const taskFields = <const T extends string>(task: T) => ({
  id: Type.String({
    description: 'The task (qtask_…), finished before the answer: GET /background-task/{id} has the figures.',
  }),
  status: StringEnum(['running', 'finished', 'failed'] as const),
  task: Type.Literal(task),
  updatedAt: Timestamp,
});

const AppUsageStatsOut = Type.Object(
  {
    ...taskFields('application.stats'),
    unresolvedAppIds: Type.Array(Type.String(), {
      description: 'Ids or uids given that name no application.',
    }),
  },
  { title: 'AppUsageStatsOut' },
);

const AggregateEventTypesOut = Type.Object(taskFields('event-type.aggregate'), {
  title: 'AggregateEventTypesOut',
});

/**
 * Svix's usage statistics, background tasks whose figures are read from the task's data. Courier
 * computes them before answering (one query each) and keeps the finished task.
 */
export function usageStatsRoutes(app: Api, deps: ApiDeps): void {
  const { db } = deps;

  app.post(
    '/api/v1/stats/usage/app',
    {
      schema: {
        tags,
        summary: 'Application usage stats',
        description:
          'Message destinations (a message and an endpoint it was for, however many attempts it took) of the ' +
          "messages created in [since, until), per application; read them from the task's data.appStats. " +
          'Counts cover what is retained (COURIER_RETENTION).',
        body: AppUsageStatsIn,
        response: { 202: AppUsageStatsOut },
      },
    },
    async (request, reply) => {
      const since = Date.parse(request.body.since);
      const until = Date.parse(request.body.until);
      if (until <= since) throw fieldError(['body', 'until'], 'must be after since');
      const { resolved, unresolved } = request.body.appIds
        ? await resolveApplications(db, request.body.appIds)
        : { resolved: null, unresolved: [] };
      // Nothing was created before 1970: a window reaching back past it starts there.
      const appStats = await appUsage(db, { since: Math.max(0, since), until: Math.max(0, until) }, resolved);
      const task = await finishedTask(deps, request.log, 'application.stats', { appStats });
      return reply.code(202).send({ ...task, unresolvedAppIds: unresolved });
    },
  );

  app.put(
    '/api/v1/stats/usage/event-types',
    {
      schema: {
        tags,
        summary: 'Event type usage',
        description:
          'Per application with an endpoint: the event types its endpoints subscribe to by name ' +
          '(explicitlySubscribedEventTypes) and whether one takes every type (hasCatchAllEndpoint); read them ' +
          "from the task's data.event_types.",
        response: { 202: AggregateEventTypesOut },
      },
    },
    async (request, reply) => {
      const usage = await eventTypeUsage(db);
      return reply
        .code(202)
        .send(await finishedTask(deps, request.log, 'event-type.aggregate', { event_types: usage }));
    },
  );
}
