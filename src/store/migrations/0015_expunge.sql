-- A message's payload can be expunged (Svix's "delete message content"): sent by mistake with
-- something it should not carry. The bytes are replaced by nothing and the instant kept here; the
-- message, its attempts and its dead letters stay, but nothing of it can be sent again.

alter table courier_messages add column expunged_at timestamptz;
