import { Type } from 'typebox';
import {
  type DeadLetter,
  listDeadLetters,
  REPLAY_BATCH,
  replayAllDeadLetters,
  replayDeadLetters,
} from '../../store/queries/dead-letter.ts';
import { deliveryIdsOf } from '../../store/queries/resend.ts';
import { fieldError } from '../errors.ts';
import { requireEndpoint } from '../lookup.ts';
import { forwardListQuery, forwardPage } from '../pagination.ts';
import { iso, ListResponse, msOf, Nullable, Timestamp } from '../schemas/common.ts';
import { EndpointParams } from '../schemas/endpoints.ts';
import type { Api, ApiDeps } from '../types.ts';

const tags = ['Endpoint'];
const BASE = '/api/v1/app/:app_id/endpoint/:endpoint_id';

const DeadLetterOut = Type.Object(
  {
    deliveryId: Type.Integer(),
    msgId: Type.String(),
    endpointId: Type.String(),
    state: Type.String({ enum: ['failed', 'expired'] }),
    attempts: Type.Integer(),
    lastError: Nullable(Type.String()),
    updatedAt: Timestamp,
    payloadExpunged: Type.Boolean({
      description:
        "Its message's payload was deleted (expunged, or past its retention): it cannot be replayed.",
    }),
  },
  {
    title: 'DeadLetterOut',
    description: 'Courier extension: a delivery that failed permanently or expired.',
  },
);

const ReplayIn = Nullable(
  Type.Object(
    {
      since: Type.Optional(Nullable(Timestamp)),
      until: Type.Optional(Nullable(Timestamp)),
      messageIds: Type.Optional(
        Nullable(
          Type.Array(Type.String({ pattern: '^[a-zA-Z0-9\\-_.]{1,256}$' }), {
            maxItems: REPLAY_BATCH,
            description: 'Message ids or eventIds; all dead letters in the range when absent.',
          }),
        ),
      ),
      deliveryIds: Type.Optional(
        Nullable(
          Type.Array(Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER }), {
            maxItems: REPLAY_BATCH,
            description: "Or the dead letters' deliveryIds, as listed (not with messageIds).",
          }),
        ),
      ),
    },
    { title: 'ReplayDeadLettersIn' },
  ),
);

const deadLetterOut = (d: DeadLetter) => ({
  deliveryId: d.deliveryId,
  msgId: d.messageId,
  endpointId: d.endpointId,
  state: d.state,
  attempts: d.attempts,
  lastError: d.lastError,
  updatedAt: iso(d.updatedAt),
  payloadExpunged: d.payloadExpunged,
});

export function deadLetterRoutes(app: Api, deps: ApiDeps): void {
  const { db, clock } = deps;

  app.get(
    `${BASE}/dead-letter`,
    {
      schema: {
        tags,
        summary: 'List dead letters (Courier extension)',
        description:
          'Courier extension. Deliveries of this endpoint that failed permanently or expired, oldest first; since and ' +
          'until bound when they did. The iterator is the last deliveryId (no prevIterator).',
        params: EndpointParams,
        querystring: Type.Object({
          ...forwardListQuery('^[0-9]{1,15}$'),
          since: Type.Optional(Timestamp),
          until: Type.Optional(Timestamp),
        }),
        response: { 200: ListResponse(DeadLetterOut, 'ListResponse_DeadLetterOut_') },
      },
    },
    async (request) => {
      const { endpoint } = await requireEndpoint(db, request.params.app_id, request.params.endpoint_id);
      const { limit = 50, iterator, since, until } = request.query;
      const rows = await listDeadLetters(db, {
        endpointId: endpoint.id,
        since: msOf(since),
        until: msOf(until),
        limit: limit + 1,
        afterId: iterator === undefined ? undefined : Number(iterator),
        now: clock.now(),
      });
      return forwardPage(rows, limit, (d) => String(d.deliveryId), deadLetterOut);
    },
  );

  app.post(
    `${BASE}/dead-letter/replay`,
    {
      schema: {
        tags,
        summary: 'Replay dead letters (Courier extension)',
        description:
          'Courier extension. Schedules the chosen dead letters again now, with a fresh attempt budget and the same ' +
          'message id and bytes (held while the endpoint is paused or disabled).',
        params: EndpointParams,
        body: ReplayIn,
        response: { 200: Type.Object({ replayed: Type.Integer() }, { title: 'ReplayDeadLettersOut' }) },
      },
    },
    async (request) => {
      const { app: application, endpoint } = await requireEndpoint(
        db,
        request.params.app_id,
        request.params.endpoint_id,
      );
      const body = request.body ?? {};
      const range = { since: msOf(body.since), until: msOf(body.until) };
      if (body.messageIds && body.deliveryIds) {
        throw fieldError(['body', 'deliveryIds'], 'give messageIds or deliveryIds, not both');
      }
      if (!body.messageIds && !body.deliveryIds) {
        return {
          replayed: await replayAllDeadLetters(db, { endpointId: endpoint.id, ...range }, clock.now()),
        };
      }
      // Another endpoint's delivery ids select nothing: the replay keeps to this endpoint's.
      const ids =
        body.deliveryIds ??
        (await deliveryIdsOf(db, {
          appId: application.id,
          endpointId: endpoint.id,
          messageIds: body.messageIds!,
        }));
      if (ids.length === 0) return { replayed: 0 };
      const { replayed } = await replayDeadLetters(
        db,
        { endpointId: endpoint.id, ...range, deliveryIds: ids, limit: ids.length },
        clock.now(),
      );
      return { replayed };
    },
  );
}
