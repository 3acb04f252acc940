import { Type } from 'typebox';
import { MESSAGE_NAMES_MAX, PAYLOAD_RETENTION_HOURS } from '../../message-limits.ts';
import { type Message, payloadGoneAt } from '../../store/repos/messages.ts';
import { ApplicationIn } from './applications.ts';
import { TaskOut } from './background-tasks.ts';
import { AnyObject, Channel, EventTypeName, IdOrUid, iso, Nullable, Tag, Timestamp } from './common.ts';

export const MessageParams = Type.Object({
  app_id: IdOrUid('The application id (app_…) or uid.'),
  msg_id: IdOrUid('The message id (msg_…) or its eventId.'),
});

/** The channels a message is sent on: only endpoints on one of them take it. */
const MessageChannels = Type.Optional(
  Nullable(Type.Array(Channel, { maxItems: MESSAGE_NAMES_MAX, uniqueItems: true })),
);

export const MessageIn = Type.Object(
  {
    eventType: EventTypeName,
    payload: AnyObject('A JSON object, delivered as the exact bytes of its JSON serialization.'),
    eventId: Type.Optional(
      Nullable(
        Type.String({
          pattern: '^[a-zA-Z0-9\\-_.]{1,256}$',
          maxLength: 256,
          description: 'Your id for this event: a second message with the same eventId is refused (409).',
        }),
      ),
    ),
    channels: MessageChannels,
    tags: Type.Optional(Nullable(Type.Array(Tag, { maxItems: MESSAGE_NAMES_MAX, uniqueItems: true }))),
    payloadRetentionPeriod: Type.Optional(
      Nullable(
        Type.Integer({
          minimum: 5,
          maximum: 90,
          description:
            'Days to keep the payload; then it is expunged (it reads {}, and what was still to be sent fails). ' +
            'Without it, or beyond COURIER_RETENTION, the payload goes with the message at the end of the retention period.',
        }),
      ),
    ),
    payloadRetentionHours: Type.Optional(
      Nullable(
        Type.Integer({
          minimum: PAYLOAD_RETENTION_HOURS.min,
          maximum: PAYLOAD_RETENTION_HOURS.max,
          description: 'The same in hours; give one of the two.',
        }),
      ),
    ),
    application: Type.Optional(
      Type.Object(ApplicationIn.properties, {
        description:
          "Makes the path's application if it does not exist yet, under the uid in the path (this body's uid, " +
          'if given, must be the same); ignored when it exists.',
      }),
    ),
    deliverAt: Type.Optional(
      Nullable(
        Type.String({
          maxLength: 64,
          description:
            'Not supported: a message is delivered as soon as it is published, so any value is refused (422) ' +
            'rather than ignored.',
        }),
      ),
    ),
  },
  {
    title: 'MessageIn',
    description:
      'Other Svix fields are accepted and ignored, but a raw payload (transformationsParams.rawPayload) is refused ' +
      '(422): receivers would get {}. Every message and its ' +
      "attempts are kept for the installation's retention period (COURIER_RETENTION, 90 days by default) after it " +
      'was published, and longer while one of its deliveries is in flight or retrying; its payload as long, or ' +
      'for payloadRetentionPeriod or payloadRetentionHours if given.',
  },
);

export const MessagePrecheckIn = Type.Object(
  {
    eventType: EventTypeName,
    channels: MessageChannels,
  },
  { title: 'MessagePrecheckIn' },
);
export const MessagePrecheckOut = Type.Object({ active: Type.Boolean() }, { title: 'MessagePrecheckOut' });

export const MessageOut = Type.Object(
  {
    id: Type.String({ examples: ['msg_01HZX1ZQ9R6Y5W2V3T4S5R6Q7P'] }),
    eventId: Nullable(Type.String()),
    eventType: Type.String(),
    payload: Type.Unknown({
      description:
        'The JSON payload ({} when with_content=false). A message stored by other means whose bytes are not JSON ' +
        'comes back as a string.',
    }),
    channels: Nullable(Type.Array(Type.String())),
    tags: Nullable(Type.Array(Type.String())),
    timestamp: Timestamp,
    expungedAt: Nullable(
      Type.String({
        format: 'date-time',
        description:
          'Courier extension: when the payload was expunged, or its own retention (payloadRetentionHours or ' +
          'payloadRetentionPeriod) ran out (it then reads {}); null while it is kept.',
      }),
    ),
    payloadExpiresAt: Nullable(
      Type.String({
        format: 'date-time',
        description:
          'Courier extension: when the payload’s own retention (payloadRetentionHours or payloadRetentionPeriod) ' +
          'runs out; null when it has none (it is kept as long as the message), and once it is gone (expungedAt). ' +
          'The message, and its payload with it, may go sooner, at the end of COURIER_RETENTION.',
      }),
    ),
  },
  { title: 'MessageOut' },
);

/** A message of the list, where with_status=true adds where it stands (the other reads never do). */
export const MessageListItemOut = Type.Object(
  {
    ...MessageOut.properties,
    statusCounts: Type.Optional(
      Type.Object(
        {
          success: Type.Integer({ minimum: 0 }),
          pending: Type.Integer({ minimum: 0, description: 'Waiting for its first attempt or a retry.' }),
          sending: Type.Integer({ minimum: 0 }),
          fail: Type.Integer({ minimum: 0, description: 'Dead letters.' }),
        },
        {
          description:
            'Courier extension, with with_status=true: how many of its endpoints the message stands at in each ' +
            'of the four states of an endpoint’s messages list (deleted endpoints not counted).',
        },
      ),
    ),
  },
  { title: 'MessageListItemOut' },
);

/** Messages published through the API are JSON; courier_publish called from SQL may store any bytes. */
function payloadOf(bytes: Buffer): unknown {
  const text = bytes.toString('utf8');
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/** The message as the API shows it at `now`: a payload past its retention is gone, swept or not. */
export function messageOut(m: Message, now: number, withContent = true) {
  const goneAt = payloadGoneAt(m, now);
  return {
    id: m.id,
    eventId: m.eventId,
    eventType: m.eventType,
    payload: withContent && m.payload && goneAt === null ? payloadOf(m.payload) : {},
    channels: m.channels,
    tags: m.tags,
    timestamp: iso(m.createdAt),
    expungedAt: goneAt === null ? null : iso(goneAt),
    payloadExpiresAt: goneAt === null && m.payloadExpiresAt !== null ? iso(m.payloadExpiresAt) : null,
  };
}

export const ExpungeAllContentsOut = TaskOut('application.purge_content', 'ExpungeAllContentsOut');
