-- Publishing in batches, and without NOTIFY inside the transaction.
--
-- Courier's own publish path gathers the publishes that arrive while one is being written and
-- writes them in one statement and one commit: per message, the parsing, planning and commit of a
-- statement are most of the cost (measured: 5 messages per call publish 1.8x as many per second).
--
-- NOTIFY: a notifying transaction holds a database-wide lock from before its commit record is
-- flushed until after, so notifying publishes commit one at a time instead of sharing WAL flushes.
-- Courier's path passes p_notify => false and, after the commit, sends one coalesced NOTIFY when
-- some endpoint had nothing due before (woke). courier_publish, the transactional-outbox entry
-- point, keeps notifying at commit, so workers wake when the caller's transaction commits.
drop function courier_publish(text, text, bytea, text, text[], text[], timestamptz, text);

-- Messages given as parallel arrays (payloads as one byte string cut by p_payload_sizes, which
-- needs no array encoding of bytes; channels and tags as a JSON array of arrays or nulls), each
-- with one delivery per matching endpoint. One row per message, in input order. A repeated
-- (app, event_id), even within the batch, returns the existing message with created = false.
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
  p_notify boolean
) returns table (message_id text, created boolean, deliveries integer, woke boolean)
-- Custom plans, re-made on every call for these array-driven statements, cost more than running
-- them; and key lookups only, whatever the statistics say (see the end of this file).
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
    from unnest(p_app_ids, p_event_types, p_payload_sizes, p_event_ids, p_nows, p_message_ids)
           with ordinality as u(app_id, event_type, size, event_id, at, id, ord)
  ), input as (
    select u.ord, u.app_id, u.event_type, substring(p_payloads from (u.offset_ + 1)::int for u.size) as payload,
           u.event_id, u.at, u.id,
           case when jsonb_typeof(p_channels -> (u.ord::int - 1)) = 'array'
             then array(select jsonb_array_elements_text(p_channels -> (u.ord::int - 1))) end as channels,
           case when jsonb_typeof(p_tags -> (u.ord::int - 1)) = 'array'
             then array(select jsonb_array_elements_text(p_tags -> (u.ord::int - 1))) end as tags
    from sized u
  ), ins as (
    insert into courier_messages as m (id, app_id, event_type, event_id, payload, channels, tags, created_at)
    select i.id, i.app_id, i.event_type, i.event_id, i.payload, i.channels, i.tags, i.at
    from input i order by i.ord
    on conflict (app_id, event_id) where event_id is not null do nothing
    returning m.id
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

-- The single-message form, for SQL callers (the transactional outbox): in the caller's
-- transaction, notifying workers when it commits unless p_notify is false.
create or replace function courier_publish(
  p_app_id text,
  p_event_type text,
  p_payload bytea,
  p_event_id text default null,
  p_channels text[] default null,
  p_tags text[] default null,
  p_now timestamptz default now(),
  p_message_id text default null,
  p_notify boolean default true
) returns table (message_id text, created boolean, deliveries integer, woke boolean)
language sql as $$
  select * from courier_publish_batch(
    array[p_app_id], array[p_event_type], p_payload, array[length(p_payload)], array[p_event_id],
    jsonb_build_array(to_jsonb(p_channels)), jsonb_build_array(to_jsonb(p_tags)),
    array[p_now], array[coalesce(p_message_id, courier_new_id('msg', p_now))], p_notify)
$$;

-- The claim of 0002, except that an endpoint it took deliveries from stays due (no second look
-- 500 ms later): publishes now lock the endpoint's queue row (KEY SHARE), which closes the race the
-- second look papered over.
-- Claim: up to p_limit due deliveries, endpoint by endpoint, within each endpoint's in-flight cap
-- and rate limit, in a few statements however many endpoints the batch spans. The endpoints' queue
-- rows are locked (SKIP LOCKED) while their budgets are computed, so the limits hold across all
-- workers. Endpoint configuration is not returned: workers cache it by config_version.
create or replace function courier_claim(p_owner text, p_now timestamptz, p_lease_ms integer, p_limit integer)
returns table (
  delivery_id bigint,
  message_id text,
  endpoint_id text,
  attempts integer,
  give_up_at timestamptz,
  trigger smallint,
  event_type text,
  payload bytea,
  endpoint_version bigint,
  app_version bigint
)
language plpgsql as $$
declare
  v_slot bigint := floor(extract(epoch from p_now) * 10);
  v_eps text[];
  v_takes integer[];
  v_newest bigint[];
  v_ids bigint[];
  v_claimed text[];
  v_messages text[];
  v_attempts integer[];
  v_give_up timestamptz[];
  v_triggers smallint[];
begin
  with locked as (
    select cq.endpoint_id, cq.max_in_flight, cq.in_flight, cq.rate_limit, cq.next_due_at,
           greatest(v_slot, cq.rl_slot) as newest,
           courier_rl_age(cq.rl_counts, greatest(v_slot, cq.rl_slot) - cq.rl_slot) as counts
    from courier_endpoint_queues cq
    where cq.active and cq.next_due_at <= p_now and cq.in_flight < cq.max_in_flight
      and (cq.blocked_until is null or cq.blocked_until <= p_now)
    order by cq.next_due_at
    limit p_limit
    for update skip locked
  ), budget as (
    select l.endpoint_id, l.newest, l.next_due_at,
           greatest(0, least(l.max_in_flight - l.in_flight,
                             l.rate_limit - (select coalesce(sum(c), 0)::int from unnest(l.counts) c),
                             ceil(l.rate_limit / 10.0)::int - l.counts[12])) as want
    from locked l
  ), shared as (
    -- The batch limit goes to the endpoints due first.
    select b.endpoint_id, b.newest,
           least(b.want, greatest(0, p_limit - coalesce(sum(b.want) over (
             order by b.next_due_at, b.endpoint_id rows between unbounded preceding and 1 preceding), 0)))::int as take
    from budget b
  )
  select array_agg(s.endpoint_id), array_agg(s.take), array_agg(s.newest)
    into v_eps, v_takes, v_newest from shared s;
  if v_eps is null then
    return;
  end if;

  with picked as (
    select p.id from unnest(v_eps, v_takes) as e(endpoint_id, take)
    cross join lateral (
      select d.id from courier_deliveries d
      where d.endpoint_id = e.endpoint_id and d.state = 'pending' and d.next_attempt_at <= p_now
      order by d.next_attempt_at
      limit e.take
      for update skip locked
    ) p
    where e.take > 0
  ), upd as (
    update courier_deliveries d
      set state = 'in_flight', lease_owner = p_owner, updated_at = p_now,
          lease_expires_at = p_now + make_interval(secs => p_lease_ms / 1000.0)
    from picked where d.id = picked.id
    returning d.id, d.endpoint_id, d.message_id, d.attempts, d.give_up_at, d.trigger
  )
  select coalesce(array_agg(upd.id), '{}'), coalesce(array_agg(upd.endpoint_id), '{}'),
         array_agg(upd.message_id), array_agg(upd.attempts), array_agg(upd.give_up_at), array_agg(upd.trigger)
    into v_ids, v_claimed, v_messages, v_attempts, v_give_up, v_triggers from upd;

  with claimed as (
    select e.endpoint_id, e.newest, e.take,
           (select count(*)::int from unnest(v_claimed) c where c = e.endpoint_id) as n
    from unnest(v_eps, v_newest, v_takes) as e(endpoint_id, newest, take)
  ), windows as (
    select c.endpoint_id, c.newest, c.n, aged[1:11] || (aged[12] + c.n) as counts
    from claimed c
    join courier_endpoint_queues q on q.endpoint_id = c.endpoint_id,
    lateral courier_rl_age(q.rl_counts, c.newest - q.rl_slot) as aged
    -- Untouched: endpoints the batch limit left out (nothing changed for them). Updated: those that
    -- had a share (claimed, or found nothing due: next_due_at must move), and those out of rate
    -- budget, which sleep until their window frees up.
    where c.take > 0 or courier_rl_blocked(aged, q.rate_limit, c.newest) is not null
  )
  update courier_endpoint_queues q
    set in_flight = q.in_flight + w.n,
        rl_slot = w.newest,
        rl_counts = w.counts,
        blocked_until = courier_rl_blocked(w.counts, q.rate_limit, w.newest),
        -- An endpoint that gave deliveries stays due: the worker claims again at once, and the
        -- publishes meanwhile find it due and need not lock it for update or wake anyone. The claim
        -- that finds nothing lets next_due_at go; a publish cannot slip in unseen, since publishes
        -- hold a KEY SHARE lock on the row, which this claim's FOR UPDATE skips or waits out.
        next_due_at = case when w.n > 0 then p_now else v_next.at end
  from windows w
  left join lateral (select d.next_attempt_at as at from courier_deliveries d
                      where d.endpoint_id = w.endpoint_id and d.state = 'pending'
                      order by d.next_attempt_at limit 1) v_next on true
  where q.endpoint_id = w.endpoint_id;

  -- Lateral lookups by primary key: the plan must not depend on table statistics (a fresh table
  -- without them once made this a sequential scan of every delivery).
  return query
    select u.id, u.message_id, u.endpoint_id, u.attempts, u.give_up_at, u.trigger,
           m.event_type, m.payload, c.endpoint_version, c.app_version
    from unnest(v_ids, v_messages, v_claimed, v_attempts, v_give_up, v_triggers)
           as u(id, message_id, endpoint_id, attempts, give_up_at, trigger)
    cross join lateral (select m.event_type, m.payload from courier_messages m where m.id = u.message_id) m
    cross join lateral (
      select e.config_version as endpoint_version, a.config_version as app_version
      from courier_endpoints e join courier_applications a on a.id = e.app_id
      where e.id = u.endpoint_id) c
    order by u.id;
end $$;

-- The hot paths find every row through a key or an index by design. On new or fast-growing tables
-- without fresh statistics the planner would rather scan the whole table (seen: a sequential scan
-- of the deliveries for every completion while a new installation took its first 10,000 messages).
-- And their plans are made once per connection: PL/pgSQL otherwise re-plans these statements,
-- whose parameters are arrays, on every call, which at small batches cost more than running them.
alter function courier_claim(text, timestamptz, integer, integer)
  set enable_seqscan = off set plan_cache_mode = force_generic_plan;
alter function courier_complete(text, timestamptz, jsonb, integer)
  set enable_seqscan = off set plan_cache_mode = force_generic_plan;
