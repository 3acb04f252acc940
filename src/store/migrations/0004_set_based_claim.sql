-- A set-based claim: a few statements per batch however many endpoints it spans (the first
-- version looped over endpoints, five statements each), and endpoint configuration sent once per
-- change instead of with every delivery: workers cache it by config_version.

alter table courier_endpoints add column config_version bigint not null default 1;
alter table courier_applications add column config_version bigint not null default 1;

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

drop function courier_claim(text, timestamptz, integer, integer);

-- Claim: up to p_limit due deliveries, endpoint by endpoint, within each endpoint's in-flight cap
-- and rate limit (see 0002 for the window's rules). The endpoints' queue rows are locked with
-- SKIP LOCKED while their budgets are computed, so the limits hold across all workers.
create function courier_claim(p_owner text, p_now timestamptz, p_lease_ms integer, p_limit integer)
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
    returning d.id, d.endpoint_id
  )
  select coalesce(array_agg(upd.id), '{}'), coalesce(array_agg(upd.endpoint_id), '{}')
    into v_ids, v_claimed from upd;

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

  return query
    select d.id, d.message_id, d.endpoint_id, d.attempts, d.give_up_at, d.trigger,
           m.event_type, m.payload, e.config_version, a.config_version
    from unnest(v_ids) as c(id)
    join courier_deliveries d on d.id = c.id
    join courier_messages m on m.id = d.message_id
    join courier_endpoints e on e.id = d.endpoint_id
    join courier_applications a on a.id = e.app_id
    order by d.id;
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
