import type { Queryable } from '../db.ts';

/**
 * Whether endpoint row `e` takes a message of event type `eventType` on channels `channels` (SQL
 * expressions): no event types or one of them, no channels or one in common. The rule
 * courier_publish_batch applies when it fans a message out (migration 0023).
 */
export const endpointTakes = (e: string, eventType: string, channels: string): string =>
  `(${e}.event_types is null or cardinality(${e}.event_types) = 0 or ${eventType} = any(${e}.event_types))
   and (${e}.channels is null or cardinality(${e}.channels) = 0 or ${e}.channels && ${channels})`;

/**
 * Whether publishing such a message now would store a delivery for some endpoint of the
 * application: one there (not deleted) and not disabled takes it. A paused endpoint counts: its
 * delivery is held until it is resumed.
 */
export async function anyEndpointTakes(
  db: Queryable,
  appId: string,
  message: { eventType: string; channels: readonly string[] | null },
): Promise<boolean> {
  const { rows } = await db.query<{ active: boolean }>(
    `select exists (
       select 1 from courier_endpoints e
        where e.app_id = $1 and e.deleted_at is null and e.status <> 'disabled'
          and ${endpointTakes('e', '$2', '$3::text[]')}
     ) as active`,
    [appId, message.eventType, message.channels],
  );
  return rows[0]!.active;
}
