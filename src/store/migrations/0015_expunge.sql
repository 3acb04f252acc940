-- A message's payload can be expunged (Svix's "delete message content"): sent by mistake with
-- something it should not carry. The bytes are replaced by nothing and the instant kept here; the
-- message, its attempts and its dead letters stay, but nothing of it can be sent again.

alter table courier_messages add column expunged_at timestamptz;

-- A POST /msg sent with an idempotency-key keeps its response (the payload echoed) for a day, so a
-- retry gets the same answer. The message's id beside it lets an expunge blank that copy too.
alter table courier_idempotency_keys add column message_id text;
create index courier_idempotency_keys_message on courier_idempotency_keys (message_id) where message_id is not null;

-- The stored response of a published message, its payload blanked. In plpgsql, not SQL: the
-- planner inlines a SQL function and folds it on a bound parameter while planning, even in a CASE
-- branch that is not taken, and most stored responses are not a message's JSON.
create function courier_blank_payload(p_body text) returns text language plpgsql stable as $$
begin
  return jsonb_set(p_body::jsonb, '{payload}', '{}'::jsonb)::text;
end
$$;

