-- Retention deleted up to p_limit messages a statement, however many deliveries and attempts each
-- had: with a fan-out to a thousand endpoints, one statement deleted a million rows, in one
-- transaction and one burst of WAL. courier_purge_messages now also says how many attempt and
-- delivery rows it deleted, and the sweeper (src/dispatch/retention.ts) sizes the next statement
-- from it. Given p_row_budget, it also stops at the message whose rows pass the budget (one
-- message at least), so a range of wide messages after narrow ones stays within it; it then
-- reports the range as not exhausted and the last message it deleted as where to go on. The same
-- three columns a previous release's workers read (they select by name), and its arguments.
drop function courier_purge_messages(text, text, integer, timestamptz);

create function courier_purge_messages(p_before text, p_after text, p_limit integer, p_now timestamptz,
                                       p_row_budget integer default null)
returns table (scanned integer, purged integer, last_id text, rows_deleted integer)
language plpgsql as $$
declare
  v_ids text[];
  v_candidates text[];
  v_locked text[];
  v_deliveries bigint[];
  v_victims text[];
  v_attempts integer;
  v_rows integer;
  v_within text[];
  v_scanned integer;
  v_last text;
begin
  select coalesce(array_agg(m.id order by m.id), '{}') into v_ids from (
    select id from courier_messages
    where id > greatest(p_after, 'msg_') and id < p_before order by id limit p_limit
  ) m;
  if cardinality(v_ids) = 0 then
    return query select 0, 0, null::text, 0;
    return;
  end if;
  -- First without locks, so that messages that must stay cost a look and not a row lock each.
  v_candidates := courier_retention_deletable(v_ids, p_now, null);
  select coalesce(array_agg(m.id), '{}') into v_locked
    from (select id from courier_messages where id = any(v_candidates) for update skip locked) m;
  select coalesce(array_agg(d.id), '{}') into v_deliveries
    from (select id from courier_deliveries where message_id = any(v_locked) for update skip locked) d;
  v_victims := courier_retention_deletable(v_locked, p_now, v_deliveries);
  v_scanned := cardinality(v_ids);
  v_last := v_ids[cardinality(v_ids)];
  if p_row_budget is not null and cardinality(v_victims) > 1 then
    -- In id order, each message while the rows before it are within the budget.
    select coalesce(array_agg(c.id order by c.id), '{}') into v_within from (
      select v.id, sum(v.n) over (order by v.id) - v.n as before_it from (
        select m.id,
               (select count(*) from courier_attempts a where a.message_id = m.id)
               + (select count(*) from courier_deliveries d where d.message_id = m.id) as n
          from unnest(v_victims) as m(id)) v) c
     where c.before_it < p_row_budget;
    if cardinality(v_within) < cardinality(v_victims) then
      v_victims := v_within;
      -- Not the end of the range: the next call goes on after the last message deleted.
      v_scanned := p_limit;
      v_last := v_within[cardinality(v_within)];
    end if;
  end if;
  delete from courier_attempts where message_id = any(v_victims);
  get diagnostics v_attempts = row_count;
  delete from courier_deliveries where message_id = any(v_victims);
  get diagnostics v_rows = row_count;
  delete from courier_messages where id = any(v_victims);
  return query select v_scanned, cardinality(v_victims), v_last, v_attempts + v_rows;
end $$;
