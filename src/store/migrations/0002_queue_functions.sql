-- The queue's hot paths as functions: one round trip each, and callable by an application
-- sharing the database (courier_publish inside its own transaction is the transactional outbox).
-- Lock order everywhere: an application row, then endpoint rows, then delivery rows, then endpoint
-- queue rows in endpoint_id order. Claims never wait (SKIP LOCKED); the rest follow the order.

-- The NOTIFY channel for new work, per schema so several installations can share a database.
create or replace function courier_channel() returns text language sql stable as $$
  select case current_schema() when 'public' then 'courier_work' else 'courier_work_' || current_schema() end
$$;

-- A prefixed, time-sortable id (ULID body) for rows made inside SQL.
create or replace function courier_new_id(p_prefix text, p_at timestamptz) returns text
language plpgsql volatile as $$
declare
  alphabet constant text := '0123456789ABCDEFGHJKMNPQRSTVWXYZ';
  ms bigint := floor(extract(epoch from p_at) * 1000);
  rnd bytea := decode(md5(gen_random_uuid()::text), 'hex');
  body text := '';
begin
  for i in 1..10 loop
    body := substr(alphabet, (ms % 32)::int + 1, 1) || body;
    ms := ms / 32;
  end loop;
  for i in 0..15 loop
    body := body || substr(alphabet, (get_byte(rnd, i) % 32) + 1, 1);
  end loop;
  return p_prefix || '_' || body;
end $$;

-- Configuration versions: every change to an endpoint, its application or its secrets bumps one.
create or replace function courier_bump_config_version() returns trigger language plpgsql as $$
begin
  new.config_version := old.config_version + 1;
  return new;
end $$;

create trigger courier_endpoints_config_version before update on courier_endpoints
  for each row execute function courier_bump_config_version();
create trigger courier_applications_config_version before update on courier_applications
  for each row execute function courier_bump_config_version();

-- A secret added, rotated or expired changes what the endpoint's requests are signed with.
create or replace function courier_secrets_touch_endpoint() returns trigger language plpgsql as $$
begin
  update courier_endpoints set config_version = config_version
    where id = coalesce(new.endpoint_id, old.endpoint_id);
  return null;
end $$;

create trigger courier_endpoint_secrets_touch after insert or update or delete on courier_endpoint_secrets
  for each row execute function courier_secrets_touch_endpoint();

-- Locks the queue rows of these endpoints in a fixed order (no deadlocks between writers),
-- then gives back in-flight slots and lowers next_due_at to the earliest newly pending time.
create or replace function courier_queue_return(p_endpoints text[], p_pending_at timestamptz[])
returns void language plpgsql as $$
begin
  perform 1 from courier_endpoint_queues
    where endpoint_id = any(p_endpoints) order by endpoint_id for update;
  update courier_endpoint_queues q
    set in_flight = greatest(0, q.in_flight - r.n), next_due_at = least(q.next_due_at, r.next)
  from (
    select e as endpoint_id, count(*)::int as n, min(t) as next
    from unnest(p_endpoints, p_pending_at) as u(e, t) group by e
  ) r
  where q.endpoint_id = r.endpoint_id;
  -- Capacity came back: idle workers (which skip capped endpoints) must look again.
  perform pg_notify(courier_channel(), '');
end $$;

-- Publish: the message and one delivery per matching endpoint, in the caller's transaction.
-- A repeated (app, event_id) returns the existing message with created = false.
create or replace function courier_publish(
  p_app_id text,
  p_event_type text,
  p_payload bytea,
  p_event_id text default null,
  p_channels text[] default null,
  p_tags text[] default null,
  p_now timestamptz default now(),
  p_message_id text default null
) returns table (message_id text, created boolean, deliveries integer)
language plpgsql as $$
declare
  v_id text := coalesce(p_message_id, courier_new_id('msg', p_now));
  v_woken text[];
  v_count integer;
begin
  insert into courier_messages as m (id, app_id, event_type, event_id, payload, channels, tags, created_at)
  values (v_id, p_app_id, p_event_type, p_event_id, p_payload, p_channels, p_tags, p_now)
  on conflict (app_id, event_id) where event_id is not null do nothing;
  if not found then
    return query select m.id, false, 0 from courier_messages m
      where m.app_id = p_app_id and m.event_id = p_event_id;
    return;
  end if;

  -- FOR SHARE: a pause or resume in progress finishes first, so the status read here is the one
  -- that holds when this commits (held or pending), and a pause or resume after us sees our rows.
  with targets as (
    select e.id, e.status from courier_endpoints e
    where e.app_id = p_app_id and e.deleted_at is null and e.status <> 'disabled'
      and (e.event_types is null or cardinality(e.event_types) = 0 or p_event_type = any(e.event_types))
      and (e.channels is null or cardinality(e.channels) = 0 or e.channels && p_channels)
    for share
  ), ins as (
    insert into courier_deliveries (message_id, endpoint_id, state, next_attempt_at, created_at, updated_at)
    select v_id, t.id, case t.status when 'enabled' then 'pending' else 'held' end, p_now, p_now, p_now
    from targets t
    returning endpoint_id, state
  )
  select count(*)::int, coalesce(array_agg(endpoint_id order by endpoint_id) filter (where state = 'pending'), '{}')
    into v_count, v_woken from ins;

  if cardinality(v_woken) > 0 then
    perform 1 from courier_endpoint_queues
      where endpoint_id = any(v_woken) and (next_due_at is null or next_due_at > p_now)
      order by endpoint_id for update;
    update courier_endpoint_queues set next_due_at = p_now
      where endpoint_id = any(v_woken) and (next_due_at is null or next_due_at > p_now);
    -- Only an endpoint that had nothing due needs waking: one with due work is already being
    -- served (or is at its cap, and its completions will claim more). NOTIFY serialises commits,
    -- so skipping it under load matters.
    if found then
      perform pg_notify(courier_channel(), '');
    end if;
  end if;
  return query select v_id, true, v_count;
end $$;

-- Rate limit: claims are counted in 100 ms slots; at most rate_limit claims in any 12 slots (1.2 s),
-- so a receiver sees at most rate_limit requests in any second even with 100 ms of send jitter,
-- and at most ceil(rate_limit / 10) per slot, so requests are spread out instead of sent in bursts
-- at the window's edges (where any delay on the way would squeeze two bursts into one second).

-- The rate window (12 slots of 100 ms, newest last) moved forward by p_shift slots.
create or replace function courier_rl_age(p_counts integer[], p_shift bigint) returns integer[]
language sql immutable as $$
  select case
    when p_shift <= 0 then p_counts
    when p_shift >= 12 then array_fill(0, array[12])
    else p_counts[p_shift + 1 : 12] || array_fill(0, array[p_shift::int])
  end
$$;

-- Until when an endpoint with this window may claim nothing more: the next slot when the newest
-- slot is full, the slot at which enough old slots age out when the window is, else null.
create or replace function courier_rl_blocked(p_counts integer[], p_rate integer, p_newest bigint)
returns timestamptz language plpgsql immutable as $$
declare
  v_used integer;
begin
  select coalesce(sum(c), 0)::int into v_used from unnest(p_counts) c;
  if v_used < p_rate then
    if p_counts[12] >= ceil(p_rate / 10.0) then
      return to_timestamp((p_newest + 1) / 10.0);
    end if;
    return null;
  end if;
  for j in 1..12 loop
    v_used := v_used - p_counts[j];
    if v_used < p_rate then
      return to_timestamp((p_newest + j) / 10.0);
    end if;
  end loop;
  return to_timestamp((p_newest + 12) / 10.0);
end $$;

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
        -- After claiming, look again within 500 ms even if nothing seems pending: a publish that
        -- committed during this claim saw the endpoint as already due and left next_due_at alone,
        -- while this statement's snapshot cannot see its delivery. Without the second look that
        -- delivery would wait for the endpoint's next publish or retry.
        next_due_at = case
          when w.n > 0 then least(v_next.at, p_now + interval '500 milliseconds')
          else v_next.at
        end
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

-- What a worker needs to send to these endpoints; cached until a config_version changes.
create or replace function courier_endpoint_configs(p_ids text[], p_now timestamptz)
returns table (
  endpoint_id text,
  endpoint_version bigint,
  app_version bigint,
  url text,
  headers jsonb,
  endpoint_policy jsonb,
  app_policy jsonb,
  secret_keys text[],
  secret_expiry timestamptz[]
)
language sql stable as $$
  select e.id, e.config_version, a.config_version, e.url, e.headers, e.retry_policy, a.retry_policy,
         array(select s.key from courier_endpoint_secrets s
               where s.endpoint_id = e.id and (s.expires_at is null or s.expires_at > p_now)
               order by s.expires_at is null desc, s.created_at desc),
         array(select s.expires_at from courier_endpoint_secrets s
               where s.endpoint_id = e.id and (s.expires_at is null or s.expires_at > p_now)
               order by s.expires_at is null desc, s.created_at desc)
  from courier_endpoints e join courier_applications a on a.id = e.app_id
  where e.id = any(p_ids)
$$;

-- Complete a batch of attempts: each delivery's transition and its attempt row, written together.
-- Only rows still leased to p_owner change, so a completion that lost its lease counts nothing.
-- Returns the endpoints whose permanent-failure streak reached p_pause_after (to be paused).
create or replace function courier_complete(p_owner text, p_now timestamptz, p_items jsonb, p_pause_after integer)
returns table (endpoint_id text, failure_streak integer)
language plpgsql as $$
declare
  v_eps text[];
  v_states text[];
  v_next timestamptz[];
  v_seq integer[];
  v_streak text[];
  v_locked text[];
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
    -- lease_owner is set exactly while a delivery is in flight; testing state too would steer the
    -- planner to the leases index and a quadratic join with the input.
    where d.id = x.delivery_id and d.lease_owner = p_owner and q.endpoint_id = d.endpoint_id
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
    returning q.endpoint_id, q.failure_streak, q.active
  )
  select u.endpoint_id, u.failure_streak from upd_q u where u.active and u.failure_streak >= p_pause_after;
end $$;

-- Give claimed deliveries back untouched (a worker's own failure is not a delivery failure):
-- same attempt count, same next_attempt_at. p_owner null with p_expired_before takes over the
-- deliveries of workers whose lease ran out (crashed or hung).
create or replace function courier_unclaim(p_ids bigint[], p_owner text, p_expired_before timestamptz, p_limit integer)
returns integer language plpgsql as $$
declare
  v_eps text[];
  v_next timestamptz[];
begin
  with victims as (
    select d.id from courier_deliveries d
    where d.state = 'in_flight'
      and (p_ids is null or d.id = any(p_ids))
      and (p_owner is null or d.lease_owner = p_owner)
      and (p_expired_before is null or d.lease_expires_at <= p_expired_before)
    order by d.id
    limit p_limit
    for update skip locked
  ), upd as (
    update courier_deliveries d
      set state = 'pending', lease_owner = null, lease_expires_at = null
    from victims where d.id = victims.id
    returning d.endpoint_id, d.next_attempt_at
  )
  select coalesce(array_agg(upd.endpoint_id), '{}'), coalesce(array_agg(upd.next_attempt_at), '{}')
    into v_eps, v_next from upd;
  if cardinality(v_eps) > 0 then
    perform courier_queue_return(v_eps, v_next);
  end if;
  return cardinality(v_eps);
end $$;
