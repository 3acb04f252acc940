-- Completions arrive as rows of values instead of objects of named fields.
--
-- A worker sends each batch of completions as one JSON parameter. As an array of objects (0006's
-- courier_complete_batch) a batch of 100 was 60 KB, and turning it into jsonb (parsing every key,
-- sorting each object's keys) was 13 % of the server's CPU in a claim/complete loop. As an array of
-- rows, positional in the order below, it is half the size and parses in a third of the time
-- (1.1-1.4 instead of 3.3-3.8 ms per 100). Times are Unix milliseconds, which also skips parsing
-- ISO timestamps. The columns of courier_complete_rows' p_rows, by position:
--
--   0 delivery_id        7 attempt_id        14 failure_kind
--   1 state              8 number            15 response_headers (object or null)
--   2 attempts           9 trigger           16 response_body
--   3 next_attempt_at   10 url               17 decision
--   4 give_up_at        11 started_at        18 delay_ms
--   5 last_error        12 duration_ms       19 reason
--   6 streak            13 status_code       20 detail
--
-- courier_complete_batch keeps its signature and result for workers of the previous release still
-- running during an upgrade: it turns their objects into rows and completes them here.

-- Unix milliseconds (as JSON text) to a timestamp; null stays null.
create or replace function courier_ms_time(p_ms text) returns timestamptz
language sql immutable parallel safe as $$ select to_timestamp(p_ms::double precision / 1000) $$;

create or replace function courier_complete_rows(p_owner text, p_now timestamptz, p_rows jsonb, p_pause_after integer)
returns table (endpoint_id text, failure_streak integer, alarm boolean, claimable boolean)
language plpgsql set enable_seqscan = off set plan_cache_mode = force_generic_plan as $$
declare
  v_eps text[];
  v_states text[];
  v_next timestamptz[];
  v_seq integer[];
  v_streak text[];
  v_locked text[];
  v_ids bigint[] := array(select (r ->> 0)::bigint from jsonb_array_elements(p_rows) r);
begin
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

create or replace function courier_complete_batch(p_owner text, p_now timestamptz, p_items jsonb, p_pause_after integer)
returns table (endpoint_id text, failure_streak integer, alarm boolean, claimable boolean)
language sql as $$
  select c.* from courier_complete_rows(p_owner, p_now, (
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
