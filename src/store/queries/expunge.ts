import type { Queryable } from '../db.ts';
import { toDate } from '../rows.ts';

/**
 * What an expunge did. `expunged`: the payload is gone, now or before; `expired`: its retention has
 * run out, so it reads as gone, but an attempt under way keeps its bytes until a sweep after it;
 * `in_flight`: an attempt under way holds it back.
 */
export type ExpungeOutcome = 'expunged' | 'expired' | 'in_flight';

/**
 * What a due payload's expiry did. `skipped`: another worker has it, or it is no longer due; `gone`:
 * retention deleted the message first, and its expiry row went now.
 */
export type ExpiryOutcome = Exclude<ExpungeOutcome, 'expired'> | 'skipped' | 'gone';

/**
 * Locks the message, then its deliveries: the message's row lock orders an expunge with resends,
 * replays and replay-missing (which key-share lock it first), the deliveries' with claims (which
 * pass them by). FOR UPDATE, not only the update that follows: a key-share lock does not wait
 * for a plain update of the payload, nor read the new version after it.
 * Says whether the message is there, and whether one of its deliveries has an attempt under way.
 */
async function lockMessage(tx: Queryable, messageId: string): Promise<{ exists: boolean; leased: boolean }> {
  const message = await tx.query('select 1 from courier_messages where id = $1 for update', [messageId]);
  const { rows } = await tx.query<{ leased: boolean }>(
    'select lease_owner is not null as leased from courier_deliveries where message_id = $1 order by id for update',
    [messageId],
  );
  return { exists: message.rows.length > 0, leased: rows.some((r) => r.leased) };
}

/** What was still to be sent fails for good: dead letters that cannot be replayed. */
async function failUnsent(tx: Queryable, messageId: string, now: Date, reason: string): Promise<void> {
  await tx.query(
    `update courier_deliveries set state = 'failed', last_error = $3, updated_at = $2
      where message_id = $1 and state in ('pending', 'held') and lease_owner is null`,
    [messageId, now, reason],
  );
}

/** `goneAt`: when the payload went, recorded as its expungedAt. */
async function emptyPayload(tx: Queryable, messageId: string, goneAt: Date): Promise<void> {
  await tx.query(
    `update courier_messages set payload = '\\x'::bytea, expunged_at = coalesce(expunged_at, $2) where id = $1`,
    [messageId, goneAt],
  );
  await tx.query('delete from courier_payload_expiries where message_id = $1', [messageId]);
  await blankIdempotentCopy(tx, messageId);
}

/** The copy an idempotent POST kept to answer its retries; one stored after this sees expunged_at. */
async function blankIdempotentCopy(tx: Queryable, messageId: string): Promise<void> {
  await tx.query(
    `update courier_idempotency_keys set body = courier_blank_payload(body)
      where message_id = $1 and body is not null`,
    [messageId],
  );
}

/**
 * Deletes a message's payload for good, on request. Its deliveries still to be made fail ("payload
 * expunged"); one attempt under way holds the whole expunge back, since that attempt may be retried
 * with the bytes it needs, and the caller asks again; unless the payload's retention has run out:
 * then it reads as gone already, what is not under way fails ("payload expired") and its bytes are
 * left to the expiry sweep. Call inside a transaction.
 */
export async function expungePayload(
  tx: Queryable,
  input: { messageId: string; now: number },
): Promise<ExpungeOutcome> {
  // The expiry row first, as a sweep takes it (then the message): the other order could deadlock.
  const { rows } = await tx.query<{ expires_at: Date }>(
    'select expires_at from courier_payload_expiries where message_id = $1 for update',
    [input.messageId],
  );
  const { leased } = await lockMessage(tx, input.messageId);
  const now = toDate(input.now);
  const expiry = rows[0]?.expires_at;
  const expired = expiry !== undefined && expiry <= now;
  if (leased) {
    if (!expired) return 'in_flight';
    // Every read has shown it gone since its retention ran out, and no retry is sent with it. The
    // bytes wait for a sweep after the attempt, as the sweep would have them: emptying them deletes
    // the expiry row the completion and the claim look for, and a retry could go out empty.
    await failUnsent(tx, input.messageId, now, 'payload expired');
    await blankIdempotentCopy(tx, input.messageId);
    return 'expired';
  }
  // Deleted after its retention ran out, it went when that ran out, as the API has shown it.
  await failUnsent(tx, input.messageId, now, expired ? 'payload expired' : 'payload expunged');
  await emptyPayload(tx, input.messageId, expired ? expiry : now);
  return 'expunged';
}

/**
 * Expunges a payload whose retention has run out (courier_payload_expiries). Its expiry row is
 * taken SKIP LOCKED, so workers sweeping at once share the work instead of queueing on it. Nothing
 * more is sent with the bytes: what is not under way fails ("payload expired") at once, and only an
 * attempt under way keeps them, until a sweep after it. Call inside a transaction.
 */
export async function expireDuePayload(
  tx: Queryable,
  input: { messageId: string; now: number },
): Promise<ExpiryOutcome> {
  const now = toDate(input.now);
  const { rows } = await tx.query<{ expires_at: Date }>(
    `select expires_at from courier_payload_expiries
      where message_id = $1 and expires_at <= $2 for update skip locked`,
    [input.messageId, now],
  );
  if (rows.length === 0) return 'skipped';
  const { exists, leased } = await lockMessage(tx, input.messageId);
  if (!exists) {
    await tx.query('delete from courier_payload_expiries where message_id = $1', [input.messageId]);
    return 'gone';
  }
  await failUnsent(tx, input.messageId, now, 'payload expired');
  if (leased) return 'in_flight';
  // Its expiry, not the sweep's time: the API has shown the payload gone since then (payloadGoneAt).
  await emptyPayload(tx, input.messageId, rows[0]!.expires_at);
  return 'expunged';
}
