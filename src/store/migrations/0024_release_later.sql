-- A delivery the worker itself keeps failing on (one it cannot sign, say) was given back due at
-- once and claimed again at claim speed: claim, fail, give back, an error line each time. It is
-- now given back due later (own-failures.ts), still without an attempt counted: courier_release
-- takes, beside each lease, the instant it is due again, or null for "as it was". Rows are
-- rewritten only for such a give-back, which is rare.
drop function courier_release(bigint[], timestamptz[], text);

create function courier_release(p_ids bigint[], p_leases timestamptz[], p_owner text, p_due timestamptz[] default null)
returns table (released integer, busy bigint[]) language plpgsql set enable_seqscan = off as $$
declare
  v_ids bigint[];
begin
  select coalesce(array_agg(d.id), '{}') into v_ids from (
    select d.id from courier_deliveries d join unnest(p_ids, p_leases) as l(id, lease) on l.id = d.id
    where d.lease_owner = p_owner and d.lease_expires_at = l.lease
    order by d.id
    for update of d skip locked) d;
  if p_due is not null then
    -- Before courier_unclaim, which hands the endpoint's queue the rows' next_attempt_at.
    update courier_deliveries d set next_attempt_at = greatest(d.next_attempt_at, l.due)
      from unnest(p_ids, p_due) as l(id, due)
     where d.id = l.id and l.due is not null and d.id = any(v_ids);
  end if;
  return query select
    -- Locked by this transaction now, so courier_unclaim's own skip locked passes none of them by.
    courier_unclaim(v_ids, p_owner, null, cardinality(v_ids)),
    (select coalesce(array_agg(d.id), '{}') from courier_deliveries d
       join unnest(p_ids, p_leases) as l(id, lease) on l.id = d.id
      where d.lease_owner = p_owner and d.lease_expires_at = l.lease and d.id <> all(v_ids));
end $$;
