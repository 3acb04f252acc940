import type { Queryable } from '../db.ts';
import { toMs } from '../rows.ts';
import type { Page } from './applications.ts';
import { type DestinationStatus, deliveryStatusSql } from './destinations.ts';
import {
  fromMessageRow,
  MESSAGE_CONDITIONS,
  type Message,
  type MessageFilter,
  type MessagePageOptions,
  type MessageRow,
  messageColumns,
  messageConditionParams,
} from './messages.ts';

/** A message sent, or being sent, to one endpoint, with where it stands there. */
export interface EndpointMessage {
  message: Message;
  status: DestinationStatus;
  /** When the next attempt is due: null unless pending on an endpoint that takes deliveries. */
  nextAttemptAt: number | null;
}

interface Row extends MessageRow {
  x_status: DestinationStatus;
  x_next: Date | null;
}

/**
 * The application's messages in id order, each with its delivery to the endpoint: its row while
 * it is queued, dead-lettered or being sent; once delivered it has left the queue table and its
 * delivered attempt stands for it. Messages that never went to the endpoint are passed by. Walks
 * the application's messages, so no index on the hot tables is needed for it; an endpoint that
 * takes few of them (filterTypes, channels) costs a longer walk per page.
 */
const ENDPOINT_MESSAGES = (withPayload: boolean, descending: boolean) => `
  select ${messageColumns(withPayload, 'm')}, x.status as x_status, x.next_attempt_at as x_next
    from courier_messages m
    cross join lateral (
      select ${deliveryStatusSql('d')} as status,
             -- Later while the endpoint waits out a receiver's Retry-After (greatest() passes a null by).
             case when d.state = 'pending' and d.lease_owner is null
                  then greatest(d.next_attempt_at,
                                (select q.retry_after_until from courier_endpoint_queues q where q.endpoint_id = $9))
             end as next_attempt_at
        from courier_deliveries d where d.message_id = m.id and d.endpoint_id = $9
      union all
      select 'success', null::timestamptz
       where not exists (select 1 from courier_deliveries d where d.message_id = m.id and d.endpoint_id = $9)
         and exists (select 1 from courier_attempts a
                      where a.message_id = m.id and a.endpoint_id = $9 and a.decision = 'delivered')
      limit 1
    ) x
   where ${MESSAGE_CONDITIONS} and ($10::text is null or x.status = $10)
   order by id ${descending ? 'desc' : 'asc'} limit $11`;

export async function listEndpointMessages(
  db: Queryable,
  appId: string,
  endpointId: string,
  filter: MessageFilter & { status?: DestinationStatus },
  opts: MessagePageOptions,
): Promise<Page<EndpointMessage>> {
  const { rows } = await db.query<Row>(ENDPOINT_MESSAGES(opts.withPayload, opts.descending ?? true), [
    ...messageConditionParams(appId, filter, opts),
    endpointId,
    filter.status ?? null,
    opts.limit + 1,
  ]);
  return {
    data: rows.slice(0, opts.limit).map((r) => ({
      message: fromMessageRow(r),
      status: r.x_status,
      nextAttemptAt: toMs(r.x_next),
    })),
    done: rows.length <= opts.limit,
  };
}
