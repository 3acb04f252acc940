-- The outbox's courier_publish took p_now (by default now(), in microseconds) as the message's
-- time as it came; every other publish passes the engine's clock, in milliseconds. The API shows a
-- time to the millisecond, so a message published at 12:00:05.000400 read as 12:00:05.000Z, and a
-- list asked for what came after that time (after=, `courier messages --since`) listed it again.
-- Its time is now cut to the millisecond, like the others'; the signature is unchanged.
create or replace function courier_publish(
  p_app_id text,
  p_event_type text,
  p_payload bytea,
  p_event_id text default null,
  p_channels text[] default null,
  p_tags text[] default null,
  p_now timestamptz default now(),
  p_message_id text default null,
  p_notify boolean default true,
  p_payload_expires_at timestamptz default null
) returns table (message_id text, created boolean, deliveries integer, woke boolean)
language plpgsql as $$
begin
  if p_payload_expires_at is not null and p_payload_expires_at <= p_now then
    raise exception 'p_payload_expires_at (%) must be later than p_now (%)', p_payload_expires_at, p_now
      using errcode = '22023';
  end if;
  p_now := date_trunc('milliseconds', p_now);
  return query
  with published as materialized (
    select * from courier_publish_batch(
      array[p_app_id], array[p_event_type], p_payload, array[length(p_payload)], array[p_event_id],
      jsonb_build_array(to_jsonb(p_channels)), jsonb_build_array(to_jsonb(p_tags)),
      array[p_now], array[coalesce(p_message_id, courier_new_id('msg', p_now))],
      case when p_payload_expires_at is null then null else array[p_payload_expires_at] end, false)
  ), notified as (
    select pg_notify(courier_channel(), '') from published p where p_notify and p.deliveries > 0
  )
  select p.message_id, p.created, p.deliveries, p.woke
  from published p cross join (select count(*) from notified) n;
end $$;
