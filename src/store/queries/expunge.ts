import type { Queryable } from '../db.ts';
import { toDate } from '../rows.ts';

/** What an expunge did: the payload is gone (now or before), or an attempt is under way. */
export type ExpungeOutcome = 'expunged' | 'in_flight';

/** Why what was still to be sent failed: expunged on request, or its payload's retention ran out. */
export type ExpungeReason = 'payload expunged' | 'payload expired';

/**
 * Deletes a message's payload for good. Its deliveries still to be made fail (the reason,
 * dead letters that cannot be replayed); one whose attempt is under way holds it back, since that
 * attempt may be retried with the bytes it needs. Call inside a transaction: the message's row lock
 * orders it with resends, and its deliveries' row locks with claims (which pass them by) and replays.
 */
export async function expungePayload(
  tx: Queryable,
  input: { messageId: string; now: number; reason?: ExpungeReason },
): Promise<ExpungeOutcome> {
  const now = toDate(input.now);
  // FOR UPDATE, before the update: a resend's key-share lock on the message waits only for this.
  await tx.query('select 1 from courier_messages where id = $1 for update', [input.messageId]);
  const { rows } = await tx.query<{ leased: boolean }>(
    'select lease_owner is not null as leased from courier_deliveries where message_id = $1 for update',
    [input.messageId],
  );
  if (rows.some((r) => r.leased)) return 'in_flight';
  await tx.query(
    `update courier_deliveries set state = 'failed', last_error = $3, updated_at = $2
      where message_id = $1 and state in ('pending', 'held')`,
    [input.messageId, now, input.reason ?? 'payload expunged'],
  );
  await tx.query(
    `update courier_messages set payload = '\\x'::bytea, expunged_at = coalesce(expunged_at, $2),
            payload_expires_at = null
      where id = $1`,
    [input.messageId, now],
  );
  // The copy an idempotent POST kept to answer its retries; one stored after this sees expunged_at.
  await tx.query(
    `update courier_idempotency_keys set body = courier_blank_payload(body)
      where message_id = $1 and body is not null`,
    [input.messageId],
  );
  return 'expunged';
}
