-- An endpoint whose every attempt has failed for days is disabled, as Svix does
-- (COURIER_DISABLE_FAILING_AFTER, 5 days by default). The failure streak (0001) counts only
-- permanent failures: a receiver answering 5xx or timing out for days was retried until each
-- delivery gave up, and new messages kept coming for it.
--
-- The queue row keeps the start of the endpoint's run of failures (failing_since) and its latest
-- failure (last_failure_at). A completion's failed attempt starts a run when none is going, or when
-- the latest failure is more than a day old (an endpoint that failed once last week and once
-- today has not been failing for a week), counted from the end of the wait the receiver asked for
-- (a Retry-After of a day is not a day without failures); a success ends it, whatever URL it came
-- from. Like a streak step, a failure counts only from the endpoint's URL as it is now. A URL
-- change, or the endpoint enabled again, ends the run: a trigger does it, so that API processes of
-- the previous release do too (an endpoint enabled there would otherwise be disabled again at its
-- next failure, its old run still standing).
-- courier_complete_rows returns failing_since for an active endpoint whose run a failure in the
-- batch carried; the worker decides (an injected clock, a pure policy) whether the run is long
-- enough, and disables the endpoint. The result gains that column, which create or replace cannot
-- do; the previous release's workers select its columns by name, and keep working.

alter table courier_endpoint_queues add column failing_since timestamptz,
                                    add column last_failure_at timestamptz;

create function courier_end_failing_run() returns trigger language plpgsql as $$
begin
  update courier_endpoint_queues set failing_since = null, last_failure_at = null
   where endpoint_id = new.id and failing_since is not null;
  return null;
end $$;

-- The endpoint row first, then its queue row: the store's lock order.
create trigger courier_endpoints_end_failing_run after update of url, status on courier_endpoints
  for each row when (new.url is distinct from old.url or (new.status = 'enabled' and old.status <> 'enabled'))
  execute function courier_end_failing_run();

drop function courier_complete_rows(text, timestamptz, jsonb, integer);

create function courier_complete_rows(p_owner text, p_now timestamptz, p_rows jsonb, p_pause_after integer)
returns table (endpoint_id text, failure_streak integer, alarm boolean, claimable boolean, wake_at timestamptz,
               failing_since timestamptz)
language plpgsql set enable_seqscan = off set plan_cache_mode = force_generic_plan as $$
declare
  v_eps text[];
  v_states text[];
  v_next timestamptz[];
  v_seq integer[];
  v_streak text[];
  v_hold timestamptz[];
  v_urls text[];
  v_expired bigint[] := '{}';
  v_locked text[];
  v_ids bigint[];
  v_done bigint[];
  v_dids bigint[];
  v_paused text[];
  v_changed bigint[];
  v_changed_to text[];
begin
  select coalesce(array_agg((r ->> 0)::bigint) filter (where r ->> 1 <> 'delivered'), '{}'),
         coalesce(array_agg((r ->> 0)::bigint) filter (where r ->> 1 = 'delivered'), '{}')
    into v_ids, v_done
    from jsonb_array_elements(p_rows) r;
  if cardinality(v_ids) > 0 then
    select coalesce(array_agg(d.id), '{}') into v_expired
      from courier_deliveries d join courier_payload_expiries pe on pe.message_id = d.message_id
     where d.id = any(v_ids) and pe.expires_at <= p_now;
  end if;
  with input as materialized (
    select (r.ord - 1)::integer as seq, (x ->> 0)::bigint as delivery_id, x ->> 1 as state,
           (x ->> 2)::integer as attempts, courier_ms_time(x ->> 3) as next_attempt_at,
           courier_ms_time(x ->> 4) as give_up_at, x ->> 5 as last_error, x ->> 6 as streak,
           x ->> 7 as attempt_id, (x ->> 8)::integer as number, (x ->> 9)::smallint as trigger,
           x ->> 10 as url, courier_ms_time(x ->> 11) as started_at, (x ->> 12)::integer as duration_ms,
           (x ->> 13)::integer as status_code, x ->> 14 as failure_kind,
           nullif(x -> 15, 'null') as response_headers, x ->> 16 as response_body, x ->> 17 as decision,
           (x ->> 18)::bigint as delay_ms, x ->> 19 as reason, x ->> 20 as detail,
           courier_ms_time(x ->> 22) as hold_until,
           -- A completion written again (its message id in column 21) whose attempt is there already:
           -- the earlier write committed. Looked up only for those, by the attempt's whole key.
           (x ->> 21) is not null and exists (
             select 1 from courier_attempts a where a.message_id = (x ->> 21) collate "C" and a.id = (x ->> 7) collate "C"
           ) as written
    from jsonb_array_elements(p_rows) with ordinality as r(x, ord)
  ), upd as (
    update courier_deliveries d
      -- A retry for an endpoint paused meanwhile waits as held, like the rest of its deliveries.
      -- One written before only ends the claim it now matches, as a give-back does: what was
      -- done since its first write (a replay, another worker's attempt) stays as it is.
      set state = case when d.id = any(v_expired) and (x.written or x.state = 'pending') then 'failed'
                       when x.written then case when q.active then 'pending' else 'held' end
                       when x.state = 'pending' and not q.active then 'held' else x.state end,
          attempts = case when x.written then d.attempts else x.attempts end,
          next_attempt_at = case when x.written then d.next_attempt_at
                                 else coalesce(x.next_attempt_at, d.next_attempt_at) end,
          give_up_at = case when x.written then d.give_up_at else x.give_up_at end,
          last_error = case when d.id = any(v_expired) and (x.written or x.state = 'pending') then 'payload expired'
                            when x.written then d.last_error else x.last_error end,
          -- The attempt a resend or replay asked for is made: what follows is scheduled again.
          trigger = case when x.written then d.trigger else 0 end,
          lease_owner = null, lease_expires_at = null, updated_at = p_now
    from input x, courier_endpoint_queues q
    where d.id = any(v_ids) and d.id = x.delivery_id and d.lease_owner = p_owner
      and q.endpoint_id = d.endpoint_id
    returning d.id, d.endpoint_id, d.message_id, d.state, d.next_attempt_at
  ), del as (
    -- By key alone: joined with the input, the planner scanned the input once per row.
    delete from courier_deliveries d
    where d.id = any(v_done) and d.lease_owner = p_owner
    returning d.id, d.endpoint_id, d.message_id, 'delivered'::text as state, d.next_attempt_at
  ), fin as (
    select * from upd union all select * from del
  ), att as (
    insert into courier_attempts (id, delivery_id, message_id, endpoint_id, number, trigger, url, started_at,
      duration_ms, status_code, failure_kind, response_headers, response_body, decision, delay_ms, reason, detail)
    select x.attempt_id, upd.id, upd.message_id, upd.endpoint_id, x.number, x.trigger, x.url, x.started_at,
      x.duration_ms, x.status_code, x.failure_kind, x.response_headers, x.response_body, x.decision,
      x.delay_ms, x.reason, x.detail
    from fin upd join input x on x.delivery_id = upd.id
    where not x.written
  )
  select coalesce(array_agg(upd.endpoint_id), '{}'), coalesce(array_agg(upd.state), '{}'),
         coalesce(array_agg(upd.next_attempt_at), '{}'), coalesce(array_agg(x.seq), '{}'),
         -- An attempt counts toward its endpoint's streak once, however often it is written (and
         -- only from the endpoint's URL as it now is: checked below, after the lock).
         coalesce(array_agg(case when not x.written then x.streak end), '{}'),
         coalesce(array_agg(upd.id), '{}'),
         coalesce(array_agg(x.hold_until), '{}'),
         coalesce(array_agg(case when x.streak <> 'reset' or x.hold_until is not null then x.url end), '{}')
    into v_eps, v_states, v_next, v_seq, v_streak, v_dids, v_hold, v_urls
    from fin upd join input x on x.delivery_id = upd.id;

  if cardinality(v_eps) = 0 then
    return;
  end if;
  select array_agg(l.endpoint_id), coalesce(array_agg(l.endpoint_id) filter (where not l.active), '{}')
    into v_locked, v_paused from (
    select q.endpoint_id, q.active from courier_endpoint_queues q
    where q.endpoint_id = any(v_eps) order by q.endpoint_id for update
  ) l;

  -- A failure counts toward the streak and the failing run, and a Retry-After holds the endpoint,
  -- only from an attempt to its URL as it is now, read after the lock: a URL change that committed
  -- while the lock waited has reset them for the new URL, and only a statement begun after the
  -- wait sees it.
  if exists (select 1 from unnest(v_urls) u where u is not null) then
    select array_agg(case when u.s <> 'reset' and not cur.same then null else u.s end order by u.ord),
           array_agg(case when cur.same then u.h end order by u.ord)
      into v_streak, v_hold
      from unnest(v_eps, v_streak, v_hold, v_urls) with ordinality as u(ep, s, h, url, ord)
      cross join lateral (
        select u.url is null or exists (select 1 from courier_endpoints e where e.id = u.ep and e.url = u.url) as same
      ) cur;
  end if;

  -- The state of a retry was chosen from the endpoint's queue row as read without a lock. A pause
  -- or resume holds that row until it commits: if one committed while the lock above waited, this
  -- statement's snapshot (newer than the lock) sees it, and nothing else would move these
  -- deliveries. A retry stored as held on an endpoint resumed since becomes pending; one stored as
  -- pending on an endpoint paused since (the pause skipped it, leased) becomes held.
  if 'held' = any(v_states) or (cardinality(v_paused) > 0 and 'pending' = any(v_states)) then
    with changed as (
      update courier_deliveries d set state = case when q.active then 'pending' else 'held' end
        from courier_endpoint_queues q
       where d.id = any(v_dids) and q.endpoint_id = d.endpoint_id
         and ((d.state = 'held' and q.active) or (d.state = 'pending' and not q.active))
      returning d.id, d.state
    )
    select coalesce(array_agg(ch.id), '{}'), coalesce(array_agg(ch.state), '{}')
      into v_changed, v_changed_to from changed ch;
    if cardinality(v_changed) > 0 then
      select array_agg(coalesce(ch.state, u.state) order by u.ord) into v_states
        from unnest(v_dids, v_states) with ordinality as u(id, state, ord)
        left join unnest(v_changed, v_changed_to) as ch(id, state) on ch.id = u.id;
    end if;
  end if;

  return query
  with done as (
    select * from unnest(v_eps, v_states, v_next, v_seq, v_streak, v_hold)
      as c(endpoint_id, state, next_attempt_at, seq, streak, hold_until)
  ), per_ep as (
    select c.endpoint_id,
           count(*)::int as n,
           min(c.next_attempt_at) filter (where c.state = 'pending') as next,
           max(c.seq) filter (where c.streak = 'reset') as last_reset,
           max(c.seq) filter (where c.streak <> 'reset') as last_failure,
           max(c.hold_until) as hold_until
    from done c group by c.endpoint_id
  ), streaks as (
    select p.endpoint_id, p.n, p.next, p.last_reset, p.hold_until,
           p.last_failure > coalesce(p.last_reset, -1) as failing,
           (select count(*)::int from done c
            where c.endpoint_id = p.endpoint_id and c.streak = 'increment'
              and c.seq > coalesce(p.last_reset, -1)) as inc
    from per_ep p
  ), upd_q as (
    update courier_endpoint_queues q
      set in_flight = greatest(0, q.in_flight - s.n),
          next_due_at = least(q.next_due_at, s.next),
          failure_streak = case when s.last_reset is null then q.failure_streak + s.inc else s.inc end,
          -- greatest() passes nulls by: without a hold, both stay as they were.
          blocked_until = greatest(q.blocked_until, s.hold_until),
          retry_after_until = greatest(q.retry_after_until, s.hold_until),
          -- A run of failures goes on across gaps under a day; a success in the batch ends it, or
          -- starts a new one when failures followed it.
          failing_since = case when s.failing then
                                 case when s.last_reset is null
                                       and greatest(q.last_failure_at, q.retry_after_until) >= p_now - interval '1 day'
                                      then coalesce(q.failing_since, p_now) else p_now end
                               when s.last_reset is not null then null
                               else q.failing_since end,
          last_failure_at = case when s.failing then p_now
                                 when s.last_reset is not null then null
                                 else q.last_failure_at end
    from streaks s where q.endpoint_id = s.endpoint_id
    returning q.endpoint_id, q.failure_streak, q.active, q.in_flight, q.max_in_flight, q.next_due_at,
              q.blocked_until, q.failing_since, s.failing
  )
  select u.endpoint_id, u.failure_streak, u.active and u.failure_streak >= p_pause_after,
         u.active and u.in_flight < u.max_in_flight and u.next_due_at <= p_now
           and (u.blocked_until is null or u.blocked_until <= p_now),
         case when u.active and u.in_flight < u.max_in_flight and u.next_due_at is not null
                   and greatest(u.next_due_at, u.blocked_until) > p_now
              then greatest(u.next_due_at, u.blocked_until) end,
         case when u.active and u.failing then u.failing_since end
  from upd_q u;
end $$;
