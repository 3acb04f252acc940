-- Fewer claims per delivery at moderate load, where each claim costs far more than its rows.
--
-- courier_claim: an endpoint it took deliveries from is left due only if deliveries are still
-- pending there (0005 left it due regardless, which cost an empty claim after every productive
-- one). Publishes now NOTIFY whenever they make deliveries, so a publish whose endpoint a claim
-- skipped (it held the row locked) still wakes a worker.
--
-- courier_complete_batch: the completion, finding its deliveries by key (0002's courier_complete
-- could walk every delivery ever made for each completion), and returning every endpoint it
-- touched, with whether its streak calls for a pause (alarm) and whether it can be claimed now
-- (claimable: due, under its cap, not rate-blocked). A worker claims after writing completions
-- only when one can, instead of after every request. courier_complete keeps its result (the
-- alarms only) for workers of the previous release still running during an upgrade: given every
-- touched endpoint, they would take each for an alarm and pause it.

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
language plpgsql set enable_seqscan = off set plan_cache_mode = force_generic_plan as $$
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
        -- What is still pending decides, so a claim that took everything leaves nothing looking
        -- due. A publish cannot slip in unseen: publishes hold a KEY SHARE lock on the row, which
        -- this claim's FOR UPDATE skips (the publish's NOTIFY then wakes a worker) or waits out
        -- (the publish then sees next_due_at cleared and sets it).
        next_due_at = v_next.at
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

create or replace function courier_complete_batch(p_owner text, p_now timestamptz, p_items jsonb, p_pause_after integer)
returns table (endpoint_id text, failure_streak integer, alarm boolean, claimable boolean)
language plpgsql set enable_seqscan = off set plan_cache_mode = force_generic_plan as $$
declare
  v_eps text[];
  v_states text[];
  v_next timestamptz[];
  v_seq integer[];
  v_streak text[];
  v_locked text[];
  v_ids bigint[] := array(select (e ->> 'delivery_id')::bigint from jsonb_array_elements(p_items) e);
begin
  with input as (
    select * from jsonb_to_recordset(p_items) as x(
      seq integer, delivery_id bigint, state text, attempts integer, next_attempt_at timestamptz,
      give_up_at timestamptz, last_error text, streak text,
      attempt_id text, number integer, trigger smallint, url text, started_at timestamptz,
      duration_ms integer, status_code integer, failure_kind text, response_headers jsonb,
      response_body text, decision text, delay_ms bigint, reason text, detail text)
  ), upd as (
    update courier_deliveries d
      -- A retry for an endpoint paused meanwhile waits as held, like the rest of its deliveries.
      set state = case when x.state = 'pending' and not q.active then 'held' else x.state end,
          attempts = x.attempts,
          next_attempt_at = coalesce(x.next_attempt_at, d.next_attempt_at),
          give_up_at = x.give_up_at, last_error = x.last_error,
          lease_owner = null, lease_expires_at = null, updated_at = p_now
    from input x, courier_endpoint_queues q
    -- The deliveries are looked up by key (= any of the ids), never found by scanning: joined on
    -- the input alone, the planner took lease_owner for rare and walked the whole primary key
    -- (every delivery ever made) for each completion. lease_owner is set exactly while a delivery
    -- is in flight, so it stands for the state.
    where d.id = any(v_ids) and d.id = x.delivery_id and d.lease_owner = p_owner
      and q.endpoint_id = d.endpoint_id
    returning d.id, d.endpoint_id, d.message_id, d.state, d.next_attempt_at
  ), att as (
    insert into courier_attempts (id, delivery_id, message_id, endpoint_id, number, trigger, url, started_at,
      duration_ms, status_code, failure_kind, response_headers, response_body, decision, delay_ms, reason, detail)
    select x.attempt_id, upd.id, upd.message_id, upd.endpoint_id, x.number, x.trigger, x.url, x.started_at,
      x.duration_ms, x.status_code, x.failure_kind, x.response_headers, x.response_body, x.decision,
      x.delay_ms, x.reason, x.detail
    from upd join input x on x.delivery_id = upd.id
  )
  select coalesce(array_agg(upd.endpoint_id), '{}'), coalesce(array_agg(upd.state), '{}'),
         coalesce(array_agg(upd.next_attempt_at), '{}'), coalesce(array_agg(x.seq), '{}'),
         coalesce(array_agg(x.streak), '{}')
    into v_eps, v_states, v_next, v_seq, v_streak
    from upd join input x on x.delivery_id = upd.id;

  if cardinality(v_eps) = 0 then
    return;
  end if;
  select array_agg(l.endpoint_id) into v_locked from (
    select q.endpoint_id from courier_endpoint_queues q
    where q.endpoint_id = any(v_eps) order by q.endpoint_id for update
  ) l;

  return query
  with done as (
    select * from unnest(v_eps, v_states, v_next, v_seq, v_streak) as c(endpoint_id, state, next_attempt_at, seq, streak)
  ), per_ep as (
    select c.endpoint_id,
           count(*)::int as n,
           min(c.next_attempt_at) filter (where c.state = 'pending') as next,
           max(c.seq) filter (where c.streak = 'reset') as last_reset
    from done c group by c.endpoint_id
  ), streaks as (
    select p.endpoint_id, p.n, p.next, p.last_reset,
           (select count(*)::int from done c
            where c.endpoint_id = p.endpoint_id and c.streak = 'increment'
              and c.seq > coalesce(p.last_reset, -1)) as inc
    from per_ep p
  ), upd_q as (
    update courier_endpoint_queues q
      set in_flight = greatest(0, q.in_flight - s.n),
          next_due_at = least(q.next_due_at, s.next),
          failure_streak = case when s.last_reset is null then q.failure_streak + s.inc else s.inc end
    from streaks s where q.endpoint_id = s.endpoint_id
    returning q.endpoint_id, q.failure_streak, q.active, q.in_flight, q.max_in_flight, q.next_due_at,
              q.blocked_until
  )
  select u.endpoint_id, u.failure_streak, u.active and u.failure_streak >= p_pause_after,
         u.active and u.in_flight < u.max_in_flight and u.next_due_at <= p_now
           and (u.blocked_until is null or u.blocked_until <= p_now)
  from upd_q u;
end $$;

create or replace function courier_complete(p_owner text, p_now timestamptz, p_items jsonb, p_pause_after integer)
returns table (endpoint_id text, failure_streak integer)
language sql as $$
  select c.endpoint_id, c.failure_streak
  from courier_complete_batch(p_owner, p_now, p_items, p_pause_after) c
  where c.alarm
$$;

-- The outbox entry point notifies at commit whenever it made deliveries, like Courier's own
-- publish path (src/store/queries/publish.ts); woke keeps its meaning (an endpoint had nothing due).
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
  with published as materialized (
    select * from courier_publish_batch(
      array[p_app_id], array[p_event_type], p_payload, array[length(p_payload)], array[p_event_id],
      jsonb_build_array(to_jsonb(p_channels)), jsonb_build_array(to_jsonb(p_tags)),
      array[p_now], array[coalesce(p_message_id, courier_new_id('msg', p_now))], false)
  ), notified as (
    select pg_notify(courier_channel(), '') from published p where p_notify and p.deliveries > 0
  )
  select p.message_id, p.created, p.deliveries, p.woke
  from published p cross join (select count(*) from notified) n
$$;
