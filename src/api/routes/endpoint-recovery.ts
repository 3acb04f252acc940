import type { FastifyBaseLogger } from 'fastify';
import { Type } from 'typebox';
import { bulkReplay } from '../../store/queries/bulk-replay.ts';
import { replayAllDeadLetters } from '../../store/queries/dead-letter.ts';
import { replayAllMissing } from '../../store/queries/replay-missing.ts';
import { finishedTask } from '../background-task.ts';
import { requireEndpoint } from '../lookup.ts';
import { Channel, EventTypeName, Nullable, Tag, Timestamp } from '../schemas/common.ts';
import { STATUS_OF_CODE } from '../schemas/destinations.ts';
import {
  BulkReplayOut,
  EndpointParams,
  RecoverIn,
  RecoverOut,
  ReplayIn,
  ReplayOut,
} from '../schemas/endpoints.ts';
import { sentRange } from '../sent-range.ts';
import type { Api, ApiDeps } from '../types.ts';

const tags = ['Endpoint'];
const BASE = '/api/v1/app/:app_id/endpoint/:endpoint_id';
/** Svix's MessageStatus.Canceled: Courier has no such state. */
const CANCELED = 4;

const BulkReplayIn = Type.Object(
  {
    since: Timestamp,
    until: Type.Optional(Nullable(Timestamp)),
    status: Type.Optional(
      Nullable(
        Type.Integer({
          enum: [0, 1, 2, 3, 4],
          description:
            '0 success, 1 pending, 2 fail, 3 sending, 4 canceled (Courier cancels none: nothing matches).',
        }),
      ),
    ),
    statusCodeClass: Type.Optional(
      Nullable(
        Type.Integer({
          enum: [0, 100, 200, 300, 400, 500],
          description: "Its latest attempt's response status is in this class (0: no response).",
        }),
      ),
    ),
    eventTypes: Type.Optional(Nullable(Type.Array(EventTypeName, { maxItems: 100 }))),
    channel: Type.Optional(Nullable(Channel)),
    tag: Type.Optional(Nullable(Tag)),
  },
  { title: 'BulkReplayIn' },
);

/**
 * Svix's ways to send an endpoint messages again: recover (its failed deliveries), replay-missing
 * (the messages it never had a delivery of) and bulk replay (the messages it had, by filter). Svix
 * runs them as background tasks; here the work is done before the answer, which says how many
 * deliveries it scheduled, and the finished task is kept to be read back.
 */
export function endpointRecoveryRoutes(app: Api, deps: ApiDeps): void {
  const { db, clock } = deps;

  /** Svix's finished task, with the deliveries scheduled (`replayed`, a Courier extension). */
  const finished = async <T extends 'endpoint.recover' | 'endpoint.replay' | 'endpoint.bulk-replay'>(
    log: FastifyBaseLogger,
    task: T,
    app: { id: string },
    endpoint: { id: string },
    replayed: number,
  ) => ({
    ...(await finishedTask(deps, log, task, { appId: app.id, endpointId: endpoint.id, replayed })),
    replayed,
  });

  app.post(
    `${BASE}/recover`,
    {
      schema: {
        tags,
        summary: 'Recover failed messages',
        description:
          'Replays the deliveries of this endpoint that failed or expired, of messages sent in [since, until), as ' +
          'manual attempts with a fresh attempt budget (as Svix).',
        params: EndpointParams,
        body: RecoverIn,
        response: { 202: RecoverOut },
      },
    },
    async (request, reply) => {
      const { app: application, endpoint } = await requireEndpoint(
        db,
        request.params.app_id,
        request.params.endpoint_id,
      );
      const { since, until } = sentRange(request.body);
      const replayed = await replayAllDeadLetters(
        db,
        { endpointId: endpoint.id, sentSince: since, sentUntil: until },
        clock.now(),
      );
      return reply
        .code(202)
        .send(await finished(request.log, 'endpoint.recover', application, endpoint, replayed));
    },
  );

  app.post(
    `${BASE}/replay-missing`,
    {
      schema: {
        tags,
        summary: 'Replay missing messages',
        description:
          "Sends this endpoint the application's messages published in [since, until) (the time their ids carry) that it takes (its event types " +
          'and channels as they now are) and never had a delivery of: published while it was disabled, before it ' +
          'existed or before its filter took them. Messages it already got, or has a delivery of, are not sent ' +
          'again (as Svix); those whose payload is gone are passed by. Manual attempts, held while the endpoint is ' +
          'paused or disabled.',
        params: EndpointParams,
        body: ReplayIn,
        response: { 202: ReplayOut },
      },
    },
    async (request, reply) => {
      const { app: application, endpoint } = await requireEndpoint(
        db,
        request.params.app_id,
        request.params.endpoint_id,
      );
      const range = sentRange(request.body);
      const replayed = await replayAllMissing(
        db,
        application.id,
        { endpointId: endpoint.id, ...range },
        clock.now(),
      );
      return reply
        .code(202)
        .send(await finished(request.log, 'endpoint.replay', application, endpoint, replayed));
    },
  );

  app.post(
    `${BASE}/bulk-replay`,
    {
      schema: {
        tags,
        summary: 'Bulk replay messages',
        description:
          'Resends, as manual attempts, the messages sent to this endpoint that were published in [since, until) ' +
          '(the time their ids carry) and match the filters: where they stand there (status), the status code class ' +
          'of their latest attempt, event types, channel, tag. One delivered gets a new delivery, one failed a fresh ' +
          'attempt budget; one in flight is left to the attempt under way, one whose payload is gone is passed by; ' +
          'held while the endpoint is paused or disabled (as Svix).',
        params: EndpointParams,
        body: BulkReplayIn,
        response: { 202: BulkReplayOut },
      },
    },
    async (request, reply) => {
      const { app: application, endpoint } = await requireEndpoint(
        db,
        request.params.app_id,
        request.params.endpoint_id,
      );
      const body = request.body;
      const range = sentRange(body);
      if (body.status === CANCELED) {
        return reply
          .code(202)
          .send(await finished(request.log, 'endpoint.bulk-replay', application, endpoint, 0));
      }
      const replayed = await bulkReplay(
        db,
        { appId: application.id, endpointId: endpoint.id },
        {
          ...range,
          status: body.status == null ? undefined : STATUS_OF_CODE[body.status]!,
          statusCodeClass: body.statusCodeClass ?? undefined,
          eventTypes: body.eventTypes?.length ? body.eventTypes : undefined,
          channel: body.channel ?? undefined,
          tag: body.tag ?? undefined,
        },
        clock.now(),
      );
      return reply
        .code(202)
        .send(await finished(request.log, 'endpoint.bulk-replay', application, endpoint, replayed));
    },
  );
}
