-- An in-flight cap per receiving host, across its endpoints and all workers (COURIER_MAX_IN_FLIGHT_PER_HOST;
-- off by default). Several endpoints, often one customer's, can share one server, which each
-- endpoint's own cap does not protect: failing together, they would retry at it in parallel.
--
-- The host is the URL's host name and port (the scheme's default when none is given), as the
-- WHATWG URL parser reads them (receiverHost in src/delivery/receiver-host.ts, the parser the API
-- and the sender use), kept on the queue row and set with the URL. Rows of earlier endpoints are
-- filled in here from the URLs in their plain form; one the pattern does not read (an IPv4 address
-- in another notation, a non-ASCII name, a backslash) stays null, without a host cap, until its
-- endpoint is next saved; so does one an API process of the previous release creates during an
-- upgrade. A host's in-flight count is the sum of its endpoints' counts (the (host) index finds
-- them), read while the claim holds an advisory lock on the host, so two claims cannot both spend
-- its last slot.
-- The lock is only tried: a claim that finds it taken skips the endpoint as it skips a locked one
-- (no waiting, so no lock-order deadlock between claims that reach hosts in different orders).
-- An endpoint with work due whose host is full is held (blocked_until, for 500 ms), not left due:
-- workers would otherwise claim it again and again until a slot frees up. The hold is also kept in
-- host_held_until, so that a worker whose completion frees a slot on the host can end it at once
-- (courier_release_host_holds in src/store/queries/host-holds.ts), one endpoint per slot freed,
-- unless something else (a rate limit, a Retry-After) holds the endpoint too.
--
-- The claim takes a fifth argument, the cap (0: none); the four-argument form stays, with no host
-- cap, so workers of the previous release keep working during an upgrade.

alter table courier_endpoint_queues add column host text collate "C",
                                    add column host_held_until timestamptz;
update courier_endpoint_queues q
   set host = rtrim(m[2], '.') || ':' || coalesce(m[3]::int::text, case m[1] when 'https' then '443' else '80' end)
  from courier_endpoints e,
       regexp_match(lower(e.url), '^(https?)://([a-z0-9._~-]+|\[[0-9a-f:.]+\])(?::([0-9]{1,5}))?(?:[/?#]|$)') m
 where e.id = q.endpoint_id
   -- A number alone is an IPv4 address to the URL parser, which writes it in its dotted form.
   and (m[2] ~ '[a-z\[]' or m[2] ~ '^(0|[1-9][0-9]{0,2})(\.(0|[1-9][0-9]{0,2})){3}$');
create index courier_endpoint_queues_host on courier_endpoint_queues (host);

create function courier_claim_batch(p_owner text, p_now timestamptz, p_lease_ms integer, p_limit integer,
                                    p_host_cap integer)
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
  app_version bigint,
  next_due_at timestamptz
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
  v_holds timestamptz[] := '{}';
  v_hold timestamptz;
  v_hosts text[] := '{}';
  v_host_used integer[] := '{}';
  v_h integer;
  v_n integer;
  v_ids bigint[];
  v_claimed text[];
  v_messages text[];
  v_attempts integer[];
  v_give_up timestamptz[];
  v_triggers smallint[];
  v_next_due timestamptz;
begin
  -- FETCH takes one row at a time, so an endpoint is locked only once the claim has reached it.
  open v_due for
    select w.endpoint_id, w.host, w.newest, w.room,
           least(w.rate_limit - (select coalesce(sum(c), 0)::int from unnest(w.counts) c),
                 ceil(w.rate_limit / 10.0)::int - w.counts[12]) as rate_room
    from (
      select cq.endpoint_id, cq.host, cq.max_in_flight - cq.in_flight as room, cq.rate_limit,
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
    v_hold := null;
    if p_host_cap > 0 and v_take > 0 and v_ep.host is not null then
      -- The schema in the key: installations sharing a database do not pass each other's hosts by.
      if not pg_try_advisory_xact_lock(hashtext(current_schema() || '.courier_host:' || v_ep.host)) then
        -- Another claim is counting this host: skipped as a locked endpoint is (due again at once).
        v_take := 0;
      else
        v_h := array_position(v_hosts, v_ep.host);
        if v_h is null then
          select coalesce(sum(q.in_flight), 0)::int into v_n from courier_endpoint_queues q where q.host = v_ep.host;
          v_hosts := v_hosts || v_ep.host;
          v_host_used := v_host_used || v_n;
          v_h := cardinality(v_hosts);
        end if;
        -- Only what is due is counted against the host, so that an endpoint after this one in the
        -- claim may have the rest.
        select count(*)::int into v_n from (
          select 1 from courier_deliveries d
          where d.endpoint_id = v_ep.endpoint_id and d.state = 'pending' and d.next_attempt_at <= p_now
            and d.lease_owner is null
          limit v_take) due;
        v_take := greatest(0, least(v_n, p_host_cap - v_host_used[v_h]));
        v_host_used[v_h] := v_host_used[v_h] + v_take;
        if v_take = 0 and v_n > 0 then
          v_hold := p_now + interval '500 milliseconds';
        end if;
      end if;
    end if;
    v_eps := v_eps || v_ep.endpoint_id;
    v_takes := v_takes || v_take;
    v_newest := v_newest || v_ep.newest;
    v_holds := v_holds || v_hold;
    v_left := v_left - v_take;
  end loop;
  close v_due;
  v_ids := '{}';
  if cardinality(v_eps) > 0 then
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

    with claimed as materialized (
      select e.endpoint_id, e.newest, e.hold, coalesce(k.n, 0) as n
      from unnest(v_eps, v_newest, v_holds) as e(endpoint_id, newest, hold)
      left join (select c.endpoint_id, count(*)::int as n from unnest(v_claimed) as c(endpoint_id)
                 group by c.endpoint_id) k on k.endpoint_id = e.endpoint_id
    ), aged as (
      -- courier_rl_age in an expression is inlined; as a FROM item it was a function call per row.
      select c.endpoint_id, c.newest, c.hold, c.n, courier_rl_age(q.rl_counts, c.newest - q.rl_slot) as counts
      from claimed c join courier_endpoint_queues q on q.endpoint_id = c.endpoint_id
    ), windows as (
      select a.endpoint_id, a.newest, a.hold, a.n, a.counts[1:11] || (a.counts[12] + a.n) as counts from aged a
    )
    update courier_endpoint_queues q
      set in_flight = q.in_flight + w.n,
          rl_slot = w.newest,
          rl_counts = w.counts,
          -- Held (its host full) or out of rate budget: not due again before then.
          blocked_until = greatest(courier_rl_blocked(w.counts, q.rate_limit, w.newest), w.hold),
          host_held_until = w.hold,
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
  end if;

  -- A full batch may have left work behind: look again at once. Otherwise the next due instant
  -- as it stands after this claim, including endpoints it skipped because another transaction
  -- held them (those read as due now).
  if cardinality(v_ids) >= p_limit then
    v_next_due := p_now;
  else
    -- The earliest instant an endpoint with room has work due (a rate-limited one: when its
    -- window frees up).
    select min(greatest(q.next_due_at, coalesce(q.blocked_until, q.next_due_at))) into v_next_due
    from courier_endpoint_queues q
    where q.active and q.next_due_at is not null and q.in_flight < q.max_in_flight;
  end if;
  if cardinality(v_ids) = 0 then
    -- Nothing claimed: one row without a delivery carries the instant.
    return query select null::bigint, null::text, null::text, null::integer, null::timestamptz,
                        null::smallint, null::text, null::bytea, null::bigint, null::bigint, v_next_due;
    return;
  end if;

  -- Lateral lookups by primary key: the plan must not depend on table statistics (a fresh table
  -- without them once made this a sequential scan of every delivery).
  return query
    select u.id, u.message_id, u.endpoint_id, u.attempts, u.give_up_at, u.trigger,
           m.event_type, m.payload, u.endpoint_version, u.app_version, v_next_due
    from (
      select u.*, c.endpoint_version, c.app_version
      from unnest(v_ids, v_messages, v_claimed, v_attempts, v_give_up, v_triggers)
             as u(id, message_id, endpoint_id, attempts, give_up_at, trigger)
      cross join lateral (
        select e.config_version as endpoint_version, a.config_version as app_version
        from courier_endpoints e join courier_applications a on a.id = e.app_id
        where e.id = u.endpoint_id) c
      order by u.id
    ) u
    cross join lateral (select m.event_type, m.payload from courier_messages m where m.id = u.message_id) m
    order by u.id;
end $$;

create or replace function courier_claim_batch(p_owner text, p_now timestamptz, p_lease_ms integer, p_limit integer)
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
  app_version bigint,
  next_due_at timestamptz
)
language sql as $$
  select * from courier_claim_batch(p_owner, p_now, p_lease_ms, p_limit, 0)
$$;
