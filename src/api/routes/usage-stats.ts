import { Type } from 'typebox';
import { appUsage, eventTypeUsage, resolveApplications } from '../../store/repos/usage-stats.ts';
import { finishedTask } from '../background-task.ts';
import { fieldError } from '../errors.ts';
import { TaskOut } from '../schemas/background-tasks.ts';
import { IdOrUid, Nullable, Timestamp } from '../schemas/common.ts';
import { sentRange } from '../sent-range.ts';
import type { Api, ApiDeps } from '../types.ts';

const tags = ['Statistics'];
/** Applications one request may name; without a list it covers them all. */
const MAX_APP_IDS = 1000;
/**
 * A month at most: the count runs before the answer, and on PGlite it holds the one connection
 * (the workers' too) while it runs.
 */
const MAX_WINDOW_DAYS = 31;

const AppUsageStatsIn = Type.Object(
  {
    since: Timestamp,
    until: Timestamp,
    appIds: Type.Optional(
      Nullable(
        Type.Array(IdOrUid('An application id or uid.'), {
          maxItems: MAX_APP_IDS,
          description:
            'These applications only, each listed (zeros too); 422 when none is found. Without, every one with usage.',
        }),
      ),
    ),
  },
  { title: 'AppUsageStatsIn' },
);

const AppUsageStatsOut = TaskOut('application.stats', 'AppUsageStatsOut', {
  unresolvedAppIds: Type.Array(Type.String(), { description: 'Ids or uids given that name no application.' }),
});
const AggregateEventTypesOut = TaskOut('event-type.aggregate', 'AggregateEventTypesOut');

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
          'Message destinations (a message and an endpoint it was sent to, however many attempts it took) of ' +
          "the messages created in [since, until), at most 31 days, per application; read them from the task's " +
          'data.appStats. Counts cover what is retained (COURIER_RETENTION).',
        body: AppUsageStatsIn,
        response: { 202: AppUsageStatsOut },
      },
    },
    async (request, reply) => {
      const { since, until } = sentRange(request.body);
      if (until - since > MAX_WINDOW_DAYS * 86_400_000) {
        throw fieldError(
          ['body', 'until'],
          `must be at most ${MAX_WINDOW_DAYS} days after since: ask for a longer time a month at a time`,
        );
      }
      const { appIds } = request.body;
      const { resolved, unresolved } = appIds
        ? await resolveApplications(db, appIds)
        : { resolved: null, unresolved: [] };
      if (resolved?.length === 0) throw fieldError(['body', 'appIds'], 'names no application');
      // Nothing was created before 1970: a window reaching back past it starts there.
      const appStats = await appUsage(db, { since: Math.max(0, since), until: Math.max(0, until) }, resolved);
      const task = await finishedTask(
        deps,
        request.log,
        'application.stats',
        { appStats },
        { readOnly: true },
      );
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
        .send(
          await finishedTask(
            deps,
            request.log,
            'event-type.aggregate',
            { event_types: usage },
            { readOnly: true },
          ),
        );
    },
  );
}
