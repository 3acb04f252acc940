-- A retry written while its endpoint was being resumed no longer stays held for good.
--
-- courier_complete_rows chose held or pending for a retry from the endpoint's queue row as its
-- statement's snapshot saw it, without a lock. A resume locks that row, releases the deliveries
-- held at that moment and marks the queue active; a retry whose completion read the row before the
-- resume committed was stored as held afterwards, on an endpoint enabled again, and nothing would
-- ever send it. The function now looks again once it holds the queue rows (the lock waits for the
-- resume) and releases what it held on an endpoint that is active by then.
--
-- It also says when to look again (wake_at): the instant work falls due on an endpoint this
-- completion freed room on, when that is later than now. An endpoint at its cap was left out of
-- the due time every claim computed, and when a completion freed its slot with its next retry
-- still in the future, no worker had a timer for that retry: it waited for the idle timeout (30 s
-- by default) or an unrelated wake-up. The result gains that column, which create or replace
-- cannot do; courier_complete_batch, the previous release's entry point, keeps its four columns.

drop function courier_complete_rows(text, timestamptz, jsonb, integer);

create function courier_complete_rows(p_owner text, p_now timestamptz, p_rows jsonb, p_pause_after integer)
returns table (endpoint_id text, failure_streak integer, alarm boolean, claimable boolean, wake_at timestamptz)
language plpgsql set enable_seqscan = off set plan_cache_mode = force_generic_plan as $$
declare
  v_eps text[];
  v_states text[];
  v_next timestamptz[];
  v_seq integer[];
  v_streak text[];
  v_locked text[];
  v_ids bigint[];
  v_done bigint[];
  v_dids bigint[];
  v_released bigint[];
begin
  select coalesce(array_agg((r ->> 0)::bigint) filter (where r ->> 1 <> 'delivered'), '{}'),
         coalesce(array_agg((r ->> 0)::bigint) filter (where r ->> 1 = 'delivered'), '{}')
    into v_ids, v_done
    from jsonb_array_elements(p_rows) r;
  with input as materialized (
    select (r.ord - 1)::integer as seq, (x ->> 0)::bigint as delivery_id, x ->> 1 as state,
           (x ->> 2)::integer as attempts, courier_ms_time(x ->> 3) as next_attempt_at,
           courier_ms_time(x ->> 4) as give_up_at, x ->> 5 as last_error, x ->> 6 as streak,
           x ->> 7 as attempt_id, (x ->> 8)::integer as number, (x ->> 9)::smallint as trigger,
           x ->> 10 as url, courier_ms_time(x ->> 11) as started_at, (x ->> 12)::integer as duration_ms,
           (x ->> 13)::integer as status_code, x ->> 14 as failure_kind,
           nullif(x -> 15, 'null') as response_headers, x ->> 16 as response_body, x ->> 17 as decision,
           (x ->> 18)::bigint as delay_ms, x ->> 19 as reason, x ->> 20 as detail
    from jsonb_array_elements(p_rows) with ordinality as r(x, ord)
  ), upd as (
    update courier_deliveries d
      -- A retry for an endpoint paused meanwhile waits as held, like the rest of its deliveries.
      set state = case when x.state = 'pending' and not q.active then 'held' else x.state end,
          attempts = x.attempts,
          next_attempt_at = coalesce(x.next_attempt_at, d.next_attempt_at),
          give_up_at = x.give_up_at, last_error = x.last_error,
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
  )
  select coalesce(array_agg(upd.endpoint_id), '{}'), coalesce(array_agg(upd.state), '{}'),
         coalesce(array_agg(upd.next_attempt_at), '{}'), coalesce(array_agg(x.seq), '{}'),
         coalesce(array_agg(x.streak), '{}'), coalesce(array_agg(upd.id), '{}')
    into v_eps, v_states, v_next, v_seq, v_streak, v_dids
    from fin upd join input x on x.delivery_id = upd.id;

  if cardinality(v_eps) = 0 then
    return;
  end if;
  select array_agg(l.endpoint_id) into v_locked from (
    select q.endpoint_id from courier_endpoint_queues q
    where q.endpoint_id = any(v_eps) order by q.endpoint_id for update
  ) l;

  -- A retry was stored as held when its endpoint's queue row, read without a lock, said paused.
  -- A resume holds that row until it commits, and releases only the deliveries held by then: if
  -- one committed while the lock above waited, the endpoint is active again (this statement's
  -- snapshot is newer than the lock) and nothing else would release these deliveries.
  if 'held' = any(v_states) then
    with released as (
      update courier_deliveries d set state = 'pending'
        from courier_endpoint_queues q
       where d.id = any(v_dids) and d.state = 'held' and q.endpoint_id = d.endpoint_id and q.active
      returning d.id
    )
    select coalesce(array_agg(r.id), '{}') into v_released from released r;
    if cardinality(v_released) > 0 then
      select array_agg(case when u.id = any(v_released) then 'pending' else u.state end order by u.ord)
        into v_states
        from unnest(v_dids, v_states) with ordinality as u(id, state, ord);
    end if;
  end if;

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
           and (u.blocked_until is null or u.blocked_until <= p_now),
         case when u.active and u.in_flight < u.max_in_flight and u.next_due_at is not null
                   and greatest(u.next_due_at, u.blocked_until) > p_now
              then greatest(u.next_due_at, u.blocked_until) end
  from upd_q u;
end $$;

create or replace function courier_complete_batch(p_owner text, p_now timestamptz, p_items jsonb, p_pause_after integer)
returns table (endpoint_id text, failure_streak integer, alarm boolean, claimable boolean)
language sql as $$
  select c.endpoint_id, c.failure_streak, c.alarm, c.claimable from courier_complete_rows(p_owner, p_now, (
    select coalesce(jsonb_agg(jsonb_build_array(
      e -> 'delivery_id', e -> 'state', e -> 'attempts',
      extract(epoch from (e ->> 'next_attempt_at')::timestamptz) * 1000,
      extract(epoch from (e ->> 'give_up_at')::timestamptz) * 1000,
      e -> 'last_error', e -> 'streak', e -> 'attempt_id', e -> 'number', e -> 'trigger', e -> 'url',
      extract(epoch from (e ->> 'started_at')::timestamptz) * 1000,
      e -> 'duration_ms', e -> 'status_code', e -> 'failure_kind', e -> 'response_headers',
      e -> 'response_body', e -> 'decision', e -> 'delay_ms', e -> 'reason', e -> 'detail')
      order by (e ->> 'seq')::integer), '[]')
    from jsonb_array_elements(p_items) e), p_pause_after) c
$$;

