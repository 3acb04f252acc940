-- A leaner claim: endpoints are taken one at a time, and deliveries are rewritten in place.
--
-- Endpoints are claimed from one at a time, in due order.
--
-- courier_claim (0006) locked up to p_limit due endpoints' queue rows in one statement, though the
-- batch usually went to the first few (with 20 due endpoints and caps of 50, a claim of 100 locked
-- all 20 and took from 2). The rest stayed locked until it committed: other workers' claims
-- skipped them, completions for them waited. It also aged and tested the rate window of every
-- locked endpoint through function calls.
--
-- Now a cursor locks the due endpoints one at a time (SKIP LOCKED) and stops once the batch is
-- spoken for; each endpoint's budget is computed once, inline. Only the endpoints reached, which
-- have a share of the batch or are out of rate budget, are locked and updated.
--
-- And a claim rewrites its deliveries in place (HOT): in flight is a pending delivery with a lease.
--
-- Every claim used to rewrite each delivery row with new index entries (its primary key, its
-- (message_id, endpoint_id) unique key, the leases index), because it changed `state`, which the
-- partial indexes' predicates name, and `lease_expires_at`, which the leases index holds. Timed on
-- identical state, a claim of 100 spent 0.9 ms of its 4.5 ms on that. Now the claim sets only the
-- lease (`lease_owner`, `lease_expires_at`), which no index refers to; a delivery stays 'pending'
-- while leased, and whoever looks for work or waiting deliveries skips leased ones. The leases
-- index goes: expired leases are found through each endpoint's due range, where a leased
-- delivery sits (it was due when claimed). Free space is left in each page for the rewrites.

alter table courier_deliveries set (fillfactor = 70);
drop index if exists courier_deliveries_leases;
-- Claimed before this migration: the same lease, in the new form.
update courier_deliveries set state = 'pending' where state = 'in_flight';

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
  v_due refcursor;
  v_ep record;
  v_left integer := p_limit;
  v_seen integer := 0;
  v_take integer;
  v_eps text[] := '{}';
  v_takes integer[] := '{}';
  v_newest bigint[] := '{}';
  v_ids bigint[];
  v_claimed text[];
  v_messages text[];
  v_attempts integer[];
  v_give_up timestamptz[];
  v_triggers smallint[];
begin
  -- FETCH takes one row at a time, so an endpoint is locked only once the claim has reached it.
  open v_due for
    select w.endpoint_id, w.newest, w.room,
           least(w.rate_limit - (select coalesce(sum(c), 0)::int from unnest(w.counts) c),
                 ceil(w.rate_limit / 10.0)::int - w.counts[12]) as rate_room
    from (
      select cq.endpoint_id, cq.max_in_flight - cq.in_flight as room, cq.rate_limit,
             greatest(v_slot, cq.rl_slot) as newest,
             courier_rl_age(cq.rl_counts, greatest(v_slot, cq.rl_slot) - cq.rl_slot) as counts
      from courier_endpoint_queues cq
      where cq.active and cq.next_due_at <= p_now and cq.in_flight < cq.max_in_flight
        and (cq.blocked_until is null or cq.blocked_until <= p_now)
      order by cq.next_due_at
      for update skip locked
    ) w;
  -- At most p_limit endpoints, as before: a crowd of rate-blocked ones is marked over a few claims.
  while v_left > 0 and v_seen < p_limit loop
    fetch v_due into v_ep;
    exit when not found;
    v_seen := v_seen + 1;
    -- Every endpoint reached is updated below: it has a share (claimed, or found nothing due:
    -- next_due_at must move), or, out of rate budget, sleeps until its window frees up.
    v_take := greatest(0, least(v_ep.room, v_ep.rate_room, v_left));
    v_eps := v_eps || v_ep.endpoint_id;
    v_takes := v_takes || v_take;
    v_newest := v_newest || v_ep.newest;
    v_left := v_left - v_take;
  end loop;
  close v_due;
  if cardinality(v_eps) = 0 then
    return;
  end if;

  with picked as (
    select p.id from unnest(v_eps, v_takes) as e(endpoint_id, take)
    cross join lateral (
      select d.id from courier_deliveries d
      where d.endpoint_id = e.endpoint_id and d.state = 'pending' and d.next_attempt_at <= p_now
        and d.lease_owner is null
      order by d.next_attempt_at
      limit e.take
      for update skip locked
    ) p
    where e.take > 0
  ), upd as (
    update courier_deliveries d
      -- Only columns no index refers to: the row is rewritten in place (HOT).
      set lease_owner = p_owner, lease_expires_at = p_now + make_interval(secs => p_lease_ms / 1000.0)
    from picked where d.id = picked.id
    returning d.id, d.endpoint_id, d.message_id, d.attempts, d.give_up_at, d.trigger
  )
  select coalesce(array_agg(upd.id), '{}'), coalesce(array_agg(upd.endpoint_id), '{}'),
         array_agg(upd.message_id), array_agg(upd.attempts), array_agg(upd.give_up_at), array_agg(upd.trigger)
    into v_ids, v_claimed, v_messages, v_attempts, v_give_up, v_triggers from upd;

  with claimed as (
    select e.endpoint_id, e.newest,
           (select count(*)::int from unnest(v_claimed) c where c = e.endpoint_id) as n
    from unnest(v_eps, v_newest) as e(endpoint_id, newest)
  ), aged as (
    -- courier_rl_age in an expression is inlined; as a FROM item it was a function call per row.
    select c.endpoint_id, c.newest, c.n, courier_rl_age(q.rl_counts, c.newest - q.rl_slot) as counts
    from claimed c join courier_endpoint_queues q on q.endpoint_id = c.endpoint_id
  ), windows as (
    select a.endpoint_id, a.newest, a.n, a.counts[1:11] || (a.counts[12] + a.n) as counts from aged a
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
                      where d.endpoint_id = w.endpoint_id and d.state = 'pending' and d.lease_owner is null
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


-- Give claimed deliveries back untouched (a worker's own failure is not a delivery failure):
-- same attempt count, same next_attempt_at. With p_ids: those of p_owner's deliveries. Without:
-- the deliveries whose lease ran out by p_expired_before (their worker crashed or hung).
create or replace function courier_unclaim(p_ids bigint[], p_owner text, p_expired_before timestamptz, p_limit integer)
returns integer language plpgsql set enable_seqscan = off as $$
declare
  v_ids bigint[];
  v_eps text[];
  v_next timestamptz[];
begin
  if p_ids is not null then
    select coalesce(array_agg(d.id), '{}') into v_ids from (
      select d.id from courier_deliveries d
      where d.id = any(p_ids) and d.lease_owner is not null
        and (p_owner is null or d.lease_owner = p_owner)
        and (p_expired_before is null or d.lease_expires_at <= p_expired_before)
      order by d.id limit p_limit
      for update skip locked) d;
  else
    -- A leased delivery was due when claimed, so it sits at the head of its endpoint's due range,
    -- and an endpoint has at most in_flight of them: only endpoints with some in flight are
    -- searched, and no further than that many leases.
    select coalesce(array_agg(v.id), '{}') into v_ids from (
      select d.id from courier_deliveries d
      where d.id in (
        select l.id from courier_endpoint_queues q
        cross join lateral (
          select d2.id, d2.lease_expires_at from courier_deliveries d2
          where d2.endpoint_id = q.endpoint_id and d2.state = 'pending'
            and d2.next_attempt_at <= p_expired_before and d2.lease_owner is not null
          order by d2.next_attempt_at
          limit q.in_flight) l
        where q.in_flight > 0 and l.lease_expires_at <= p_expired_before)
        -- Again on the row as locked: its completion may have committed since the search.
        and d.lease_owner is not null and d.lease_expires_at <= p_expired_before
        and (p_owner is null or d.lease_owner = p_owner)
      order by d.id limit p_limit
      for update skip locked) v;
  end if;
  with upd as (
    update courier_deliveries d
      set state = 'pending', lease_owner = null, lease_expires_at = null
    where d.id = any(v_ids)
    returning d.endpoint_id, d.next_attempt_at
  )
  select coalesce(array_agg(upd.endpoint_id), '{}'), coalesce(array_agg(upd.next_attempt_at), '{}')
    into v_eps, v_next from upd;
  if cardinality(v_eps) > 0 then
    perform courier_queue_return(v_eps, v_next);
  end if;
  return cardinality(v_eps);
end $$;
