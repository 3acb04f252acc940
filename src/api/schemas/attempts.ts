import { Type } from 'typebox';
import type { Attempt } from '../../store/repos/attempts.ts';
import { iso, Nullable, Timestamp } from './common.ts';
import { MessageOut } from './messages.ts';

const ext = (description: string) => `Courier extension: ${description}`;

export const MessageAttemptOut = Type.Object(
  {
    id: Type.String({ examples: ['atmpt_01HZX1ZQ9R6Y5W2V3T4S5R6Q7P'] }),
    msgId: Type.String(),
    endpointId: Type.String(),
    url: Type.String(),
    response: Type.String({ description: 'The response body (truncated), empty on network failures.' }),
    responseStatusCode: Type.Integer({ description: '0 when no HTTP response arrived.' }),
    responseDurationMs: Type.Integer(),
    status: Type.Integer({
      enum: [0, 1, 2, 3, 4],
      description: '0 success, 1 pending, 2 fail, 3 sending, 4 canceled.',
    }),
    statusText: Type.String({ enum: ['success', 'pending', 'fail', 'sending', 'canceled'] }),
    triggerType: Type.Integer({
      enum: [0, 1],
      description: '0 scheduled, 1 manual (resend, replay, recover).',
    }),
    timestamp: Timestamp,
    attemptNumber: Type.Integer({ description: ext('1 for the first attempt of a delivery.') }),
    failureKind: Nullable(
      Type.String({ description: ext('timeout, connection_refused, dns, tls, refused, …') }),
    ),
    decision: Type.String({
      enum: ['delivered', 'retry', 'failed', 'expired'],
      description: ext('what the retry policy decided after this attempt.'),
    }),
    nextDelayMs: Nullable(Type.Integer({ description: ext('wait before the next attempt, when retrying.') })),
    reason: Nullable(
      Type.String({ description: ext('why that wait (backoff, Retry-After) or why it expired.') }),
    ),
    detail: Type.String({ description: ext('a sentence on the outcome.') }),
    responseHeaders: Nullable(
      Type.Record(Type.String(), Type.String(), {
        description: ext(
          'the response headers (names lower-case, the first 4 KiB) when the status was not a 2xx; otherwise null ' +
            '(attempts logged by earlier versions may show a 2xx answer’s headers too).',
        ),
      }),
    ),
    msg: Type.Optional(
      Type.Object(MessageOut.properties, { description: 'The message, with with_msg=true (as Svix).' }),
    ),
  },
  { title: 'MessageAttemptOut' },
);

export function attemptOut(a: Attempt) {
  const success = a.decision === 'delivered';
  return {
    id: a.id,
    msgId: a.messageId,
    endpointId: a.endpointId,
    url: a.url,
    response: a.responseBody ?? '',
    responseStatusCode: a.statusCode ?? 0,
    responseDurationMs: a.durationMs,
    status: success ? 0 : 2,
    statusText: success ? 'success' : 'fail',
    triggerType: a.trigger,
    timestamp: iso(a.startedAt),
    attemptNumber: a.number,
    failureKind: a.failureKind,
    decision: a.decision,
    nextDelayMs: a.delayMs,
    reason: a.reason,
    detail: a.detail,
    responseHeaders: a.responseHeaders,
  };
}
