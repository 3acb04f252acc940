-- The attempt log keeps two indexes instead of three.
--
-- Every completion inserts an attempt row, and each of its indexes costs an index insertion on
-- that hot path. An attempt is only ever read within its message (GET …/msg/{msg}/attempt/{id})
-- or listed per message or per endpoint, so the primary key on `id` alone served no query: the
-- key becomes (message_id, id), which is also the per-message listing's index. Attempt ids stay
-- unique (ULIDs, and unique within their message by this key).

create unique index courier_attempts_message_key on courier_attempts (message_id, id);
alter table courier_attempts drop constraint courier_attempts_pkey;
alter table courier_attempts add constraint courier_attempts_pkey primary key using index courier_attempts_message_key;
drop index courier_attempts_message;
