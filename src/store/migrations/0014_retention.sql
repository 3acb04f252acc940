-- Retention: messages older than the installation's retention period leave the database with
-- their attempts and their finished deliveries, so storage stops growing with history.
--
-- Ids are ULIDs, so "created before the cutoff" is a range of the primary key (p_before is the id
-- prefix of the cutoff instant) and no index on created_at is needed on the publish path. An
-- outbox caller of courier_publish must pass the current time as p_now (and its own p_message_id,
-- if any, made from it): a message whose id says it is older is deleted as that old. Each
-- call looks at most p_limit messages after p_after: messages that cannot go yet (a delivery still
-- in flight or retrying) cost one look per pass, not one per call, however many there are.
--
-- Lock order: the message rows, then their delivery rows, both SKIP LOCKED, so a purge never
-- waits and never deadlocks; a resend takes the endpoint row, then the message row's key, then
-- the delivery row, and a purge passes by a message it holds. With a message and all its
-- deliveries locked nothing can add a delivery or an attempt to it (attempts come only from
-- completions of leased deliveries, which keep their message) nor change a delivery's state, so
-- the check that decides, made after the locks by a statement with a newer snapshot, stays true
-- until the deletes commit.

-- Of p_ids, the messages retention may delete. What keeps a message: a delivery in flight; one
-- pending on an enabled endpoint (retrying under a retry window longer than the retention
-- period); one dead-lettered less than a day before p_now (a window set per application or
-- endpoint can end after the retention period: the dead letter stays visible for a day); once
-- the rows are locked (p_locked_deliveries; null before), a delivery not among the locked ones
-- (another transaction holds it). Not a delivery held or left pending for a paused or disabled
-- endpoint: one endpoint paused for good would otherwise keep every message of its application
-- for ever; resumed, it gets the messages of the retention period. Nor one left unleased on an
-- endpoint deleted while its request was in flight, which nothing will ever send.
create function courier_retention_deletable(p_ids text[], p_now timestamptz, p_locked_deliveries bigint[])
returns text[] language sql stable as $$
  select coalesce(array_agg(m.id), '{}')
    from unnest(p_ids) as m(id)
   where not exists (
     select 1 from courier_deliveries d
      where d.message_id = m.id
        and ((p_locked_deliveries is not null and d.id <> all(p_locked_deliveries))
             or d.lease_owner is not null
             or (d.state in ('failed', 'expired') and d.updated_at > p_now - interval '1 day')
             or (d.state in ('pending', 'in_flight')
                 and exists (select 1 from courier_endpoints e
                              where e.id = d.endpoint_id and e.deleted_at is null and e.status = 'enabled'))))
$$;

create function courier_purge_messages(p_before text, p_after text, p_limit integer, p_now timestamptz)
returns table (scanned integer, purged integer, last_id text)
language plpgsql as $$
declare
  v_ids text[];
  v_candidates text[];
  v_locked text[];
  v_deliveries bigint[];
  v_victims text[];
begin
  select coalesce(array_agg(m.id order by m.id), '{}') into v_ids from (
    select id from courier_messages
    where id > greatest(p_after, 'msg_') and id < p_before order by id limit p_limit
  ) m;
  if cardinality(v_ids) = 0 then
    return query select 0, 0, null::text;
    return;
  end if;
  -- First without locks, so that messages that must stay cost a look and not a row lock each.
  v_candidates := courier_retention_deletable(v_ids, p_now, null);
  select coalesce(array_agg(m.id), '{}') into v_locked
    from (select id from courier_messages where id = any(v_candidates) for update skip locked) m;
  select coalesce(array_agg(d.id), '{}') into v_deliveries
    from (select id from courier_deliveries where message_id = any(v_locked) for update skip locked) d;
  v_victims := courier_retention_deletable(v_locked, p_now, v_deliveries);
  delete from courier_attempts where message_id = any(v_victims);
  delete from courier_deliveries where message_id = any(v_victims);
  delete from courier_messages where id = any(v_victims);
  return query select cardinality(v_ids), cardinality(v_victims), v_ids[cardinality(v_ids)];
end $$;

-- Operational events age out with the same period; their ids are ULIDs too.
create function courier_purge_operational_events(p_before text, p_limit integer)
returns integer language sql as $$
  with gone as (
    delete from courier_operational_events e
    where e.id in (select id from courier_operational_events where id < p_before order by id limit p_limit)
    returning 1
  )
  select count(*)::integer from gone
$$;
