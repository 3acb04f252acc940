-- Two costs of the publish, per message, that bought nothing (pg_waldump over 5,000 published
-- messages of 1 KiB, each to one endpoint; 2,178 bytes of WAL per message before, 2,074 after):
--
-- - Every message went through ON CONFLICT, although only one with an event id can conflict (the
--   unique index is partial). A speculative insertion writes a second record, its confirmation,
--   and probes the index first: 48 bytes per message. Messages without an event id are now
--   inserted plainly; those with one still go through ON CONFLICT.
-- - The foreign key from a delivery to its message locked the message row (a WAL record, 54
--   bytes, once per message) and looked it up per delivery, for a row this same statement had just
--   inserted.
--   Deliveries are inserted only here, for messages created in the same statement, and by a resend,
--   which locks the message's key itself (resend.ts) as retention expects (0014); retention deletes a
--   message's attempts and deliveries before it. The constraint is dropped; the delivery to the
--   endpoint, and the message to its application, keep theirs. What it also did, refuse to delete
--   a message that still has deliveries (by hand, say: a delivery left without its message would
--   be claimed and never sent), a statement trigger now does, at a lookup per deleted message. It
--   reads committed rows and locks nothing: code that adds a delivery to an existing message must
--   lock the message's key first, as resend does. TRUNCATE of the messages alone is not refused.
--
-- Same signature and results: API processes of the previous release keep working during an
-- upgrade (they wait, as publishes and claims do, while this takes both tables' locks; see migrate.ts).

alter table courier_deliveries drop constraint courier_deliveries_message_id_fkey;

-- Key lookups whatever the statistics say: the plan is kept, and may be made while the table is empty.
create function courier_refuse_message_with_deliveries() returns trigger
language plpgsql set enable_seqscan = off as $$
declare
  v_id text;
begin
  select g.id into v_id from gone g
    where exists (select 1 from courier_deliveries d where d.message_id = g.id) limit 1;
  if v_id is not null then
    raise foreign_key_violation using
      message = format('message %s still has deliveries: delete them first', v_id),
      table = 'courier_deliveries';
  end if;
  return null;
end $$;

create trigger courier_message_deliveries_first after delete on courier_messages
  referencing old table as gone for each statement
  execute function courier_refuse_message_with_deliveries();

create or replace function courier_publish_batch(
  p_app_ids text[],
  p_event_types text[],
  p_payloads bytea,
  p_payload_sizes integer[],
  p_event_ids text[],
  p_channels jsonb,
  p_tags jsonb,
  p_nows timestamptz[],
  p_message_ids text[],
  p_payload_expires timestamptz[],
  p_notify boolean
) returns table (message_id text, created boolean, deliveries integer, woke boolean)
-- Custom plans, re-made on every call for these array-driven statements, cost more than running
-- them; and key lookups only, whatever the statistics say (see the end of 0005_publish_batch.sql).
language plpgsql set plan_cache_mode = force_generic_plan set enable_seqscan = off as $$
#variable_conflict use_column
declare
  v_created text[];
  v_eps text[];
  v_due timestamptz[];
  v_counts jsonb;
  v_woke boolean := false;
begin
  with sized as (
    select u.*, sum(u.size) over (order by u.ord) - u.size as offset_
    from unnest(p_app_ids, p_event_types, p_payload_sizes, p_event_ids, p_nows, p_message_ids, p_payload_expires)
           with ordinality as u(app_id, event_type, size, event_id, at, id, payload_expires_at, ord)
  ), input as (
    select u.ord, u.app_id, u.event_type, substring(p_payloads from (u.offset_ + 1)::int for u.size) as payload,
           u.event_id, u.at, u.id, u.payload_expires_at,
           case when jsonb_typeof(p_channels -> (u.ord::int - 1)) = 'array'
             then array(select jsonb_array_elements_text(p_channels -> (u.ord::int - 1))) end as channels,
           case when jsonb_typeof(p_tags -> (u.ord::int - 1)) = 'array'
             then array(select jsonb_array_elements_text(p_tags -> (u.ord::int - 1))) end as tags
    from sized u
  ), plain as (
    insert into courier_messages as m (id, app_id, event_type, event_id, payload, channels, tags, created_at)
    select i.id, i.app_id, i.event_type, i.event_id, i.payload, i.channels, i.tags, i.at
    from input i where i.event_id is null order by i.ord
    returning m.id
  ), keyed as (
    -- A later message of the batch with an event id an earlier one took conflicts with it here.
    insert into courier_messages as m (id, app_id, event_type, event_id, payload, channels, tags, created_at)
    select i.id, i.app_id, i.event_type, i.event_id, i.payload, i.channels, i.tags, i.at
    from input i where i.event_id is not null order by i.ord
    on conflict (app_id, event_id) where event_id is not null do nothing
    returning m.id
  ), ins as (
    select id from plain union all select id from keyed
  ), expiries as (
    -- Runs although nothing reads it (a data-modifying WITH always does); created messages only.
    -- Without expiries (the usual batch) the null array stops it before the join starts.
    insert into courier_payload_expiries (message_id, expires_at)
    select i.id, i.payload_expires_at from input i join ins on ins.id = i.id
    where p_payload_expires is not null and i.payload_expires_at is not null
  )
  select coalesce(array_agg(ins.id), '{}') into v_created from ins;

  -- FOR SHARE: a pause or resume in progress finishes first, so the status read here is the one
  -- that holds when this commits (held or pending), and a pause or resume after us sees our rows.
  -- Driven by the array through key lookups: the plan must not depend on table statistics (this
  -- function's plans are generic, and may be made while the tables are new and have none).
  with targets as (
    select m.id as message_id, m.created_at, e.id as endpoint_id, e.status
    from unnest(v_created) as c(id)
    cross join lateral (select m.id, m.app_id, m.event_type, m.channels, m.created_at
                        from courier_messages m where m.id = c.id) m
    cross join lateral (
      select e.id, e.status from courier_endpoints e
      where e.app_id = m.app_id and e.deleted_at is null and e.status <> 'disabled'
        and (e.event_types is null or cardinality(e.event_types) = 0 or m.event_type = any(e.event_types))
        and (e.channels is null or cardinality(e.channels) = 0 or e.channels && m.channels)
      for share
    ) e
  ), ins as (
    insert into courier_deliveries (message_id, endpoint_id, state, next_attempt_at, created_at, updated_at)
    select t.message_id, t.endpoint_id, case t.status when 'enabled' then 'pending' else 'held' end,
           t.created_at, t.created_at, t.created_at
    from targets t
    order by t.message_id, t.endpoint_id
    returning courier_deliveries.message_id, endpoint_id, state, next_attempt_at
  ), per_message as (
    select coalesce(jsonb_object_agg(c.message_id, c.n), '{}') as counts
    from (select ins.message_id, count(*) as n from ins group by ins.message_id) c
  ), per_endpoint as (
    select ins.endpoint_id, min(ins.next_attempt_at) as due from ins
    where ins.state = 'pending' group by ins.endpoint_id
  )
  select (select counts from per_message),
         (select array_agg(p.endpoint_id order by p.endpoint_id) from per_endpoint p),
         (select array_agg(p.due order by p.endpoint_id) from per_endpoint p)
    into v_counts, v_eps, v_due;

  -- Every target queue row is locked KEY SHARE (publishers do not block one another), so a claim
  -- (FOR UPDATE) cannot decide the endpoint has nothing due while a delivery of ours it cannot see
  -- yet is on its way: it skips the row until we commit. Rows whose next_due_at must come forward
  -- are then locked for update, in the same order.
  if v_eps is not null then
    perform 1 from courier_endpoint_queues q
      where q.endpoint_id = any(v_eps) order by q.endpoint_id for key share;
    perform 1 from courier_endpoint_queues q
      join unnest(v_eps, v_due) as w(endpoint_id, due) on w.endpoint_id = q.endpoint_id
      where q.next_due_at is null or q.next_due_at > w.due
      order by q.endpoint_id for no key update of q;
    update courier_endpoint_queues q set next_due_at = w.due
      from unnest(v_eps, v_due) as w(endpoint_id, due)
      where q.endpoint_id = w.endpoint_id and (q.next_due_at is null or q.next_due_at > w.due);
    -- Only an endpoint that had nothing due needs waking: one with due work is already being
    -- served (or is at its cap, and its completions will claim more).
    v_woke := found;
    if v_woke and p_notify then
      perform pg_notify(courier_channel(), '');
    end if;
  end if;

  if cardinality(v_created) = cardinality(p_message_ids) then
    return query
      select u.id, true, coalesce((v_counts ->> u.id)::int, 0), v_woke
      from unnest(p_message_ids) with ordinality as u(id, ord) order by u.ord;
    return;
  end if;
  -- A message not created here had its event id taken: by an earlier message, or earlier in this batch.
  return query
    select coalesce(mine.id, prior.id), mine.id is not null,
           case when mine.id is not null then coalesce((v_counts ->> mine.id)::int, 0) else 0 end, v_woke
    from unnest(p_app_ids, p_event_ids, p_message_ids) with ordinality as u(app_id, event_id, id, ord)
    left join lateral (select u.id where u.id = any(v_created)) mine(id) on true
    left join lateral (
      select m.id from courier_messages m
      where mine.id is null and m.app_id = u.app_id and m.event_id = u.event_id and m.event_id is not null
    ) prior on true
    order by u.ord;
end $$;
