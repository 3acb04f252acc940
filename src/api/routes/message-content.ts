import { expungePayload } from '../../store/queries/expunge.ts';
import { lastMessageId, messageIdsWithPayload } from '../../store/repos/messages.ts';
import { finishedTask } from '../background-task.ts';
import { attemptUnderWay } from '../errors.ts';
import { requireApp, requireMessage } from '../lookup.ts';
import { NoContent } from '../schemas/common.ts';
import { ExpungeAllContentsOut, MessageParams } from '../schemas/messages.ts';
import type { Api, ApiDeps } from '../types.ts';
import { AppParams } from './messages.ts';

const tags = ['Message'];
const PAGE = 500;

/** Deleting payloads for good: one message's, or all of an application's. */
export function messageContentRoutes(app: Api, deps: ApiDeps): void {
  const { db, clock } = deps;

  app.delete(
    '/api/v1/app/:app_id/msg/:msg_id/content',
    {
      schema: {
        tags,
        summary: 'Delete a message’s payload',
        description:
          'For a message sent by mistake with content it should not carry: its payload is deleted for good ' +
          '(it then reads {}, with expungedAt set). The message and its attempts stay; deliveries still to be made ' +
          'fail as dead letters, and it can no longer be resent or replayed. 409 while an attempt is under way, ' +
          'unless the retention the message was published with has run out: it already reads as gone (204), its ' +
          'bytes emptied by the expiry sweep after that attempt. ' +
          'Deleting again is a no-op.',
        params: MessageParams,
        response: { 204: NoContent },
      },
    },
    async (request, reply) => {
      const application = await requireApp(db, request.params.app_id);
      const message = await requireMessage(db, application, request.params.msg_id, false);
      const outcome = await db.transaction((tx) =>
        expungePayload(tx, { messageId: message.id, now: clock.now() }),
      );
      if (outcome === 'in_flight') {
        throw attemptUnderWay(
          `Message ${request.params.msg_id} has an attempt under way; try again in a moment`,
        );
      }
      return reply.code(204).send();
    },
  );

  app.post(
    '/api/v1/app/:app_id/msg/expunge-all-contents',
    {
      schema: {
        tags,
        summary: 'Delete all of an application’s payloads',
        description:
          'Deletes for good the payload of every message of the application, as DELETE …/msg/{msg_id}/content ' +
          'does for one. Done before the answer (Svix runs it as a background task): 202 with the task finished, kept to be read back. ' +
          '409 when some messages have an attempt under way and their payload still within its retention: the ' +
          'others are done; call again.',
        params: AppParams,
        response: { 202: ExpungeAllContentsOut },
      },
    },
    async (request, reply) => {
      const application = await requireApp(db, request.params.app_id);
      let underWay = 0;
      let after: string | null = null;
      // Those published by now: later ones are not this request's to delete, and would keep it going.
      const through = await lastMessageId(db, application.id);
      while (through !== null) {
        const ids = await messageIdsWithPayload(db, application.id, { afterId: after, through }, PAGE);
        for (const messageId of ids) {
          const outcome = await db.transaction((tx) => expungePayload(tx, { messageId, now: clock.now() }));
          if (outcome === 'in_flight') underWay++;
        }
        if (ids.length < PAGE) break;
        after = ids.at(-1)!;
      }
      if (underWay > 0) {
        throw attemptUnderWay(
          `${underWay} message${underWay === 1 ? ' has an attempt' : 's have attempts'} under way; the other payloads are deleted; try again in a moment`,
        );
      }
      return reply
        .code(202)
        .send(await finishedTask(deps, request.log, 'application.purge_content', { appId: application.id }));
    },
  );
}
