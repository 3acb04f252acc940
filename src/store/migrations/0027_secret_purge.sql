-- Signing secrets no longer kept for ever.
--
-- A rotated-out secret stopped signing when its grace period ended, and a deleted endpoint's
-- secrets when it was deleted, but every row stayed: old keys piled up in the table and in its
-- backups. A deleted endpoint's secrets now expire at its deletion (a trigger, so that processes
-- of the previous release deleting endpoints during an upgrade do it too; here for those deleted
-- already), and the worker's housekeeping deletes a secret an hour past its expiry
-- (queries/secret-purge.ts), along this index.
--
-- What signs changes when a secret is added or its expiry moves, not when an expired one is
-- deleted, nor when one is sealed again with another key (the same secret), nor for a deleted
-- endpoint: only then is the endpoint's config_version bumped now. So the purge and the reseal
-- at start lock only secret rows, never an endpoint row, and cannot deadlock with a rotation or
-- a deletion (endpoint row, then its secrets).
--
-- A claim's configuration pairs each secret with its expiry by position in two arrays: both are
-- now ordered by the row's id as well, so that secrets created in one millisecond (two rotations
-- in a row) cannot be paired with each other's expiry.

create index courier_endpoint_secrets_expiry on courier_endpoint_secrets (expires_at)
  where expires_at is not null;

create or replace function courier_secrets_touch_endpoint() returns trigger language plpgsql as $$
begin
  update courier_endpoints set config_version = config_version
    where id = new.endpoint_id and deleted_at is null;
  return null;
end $$;

drop trigger courier_endpoint_secrets_touch on courier_endpoint_secrets;
create trigger courier_endpoint_secrets_touch after insert or update of expires_at on courier_endpoint_secrets
  for each row execute function courier_secrets_touch_endpoint();

create function courier_expire_deleted_secrets() returns trigger language plpgsql as $$
begin
  update courier_endpoint_secrets set expires_at = new.deleted_at
   where endpoint_id = new.id and (expires_at is null or expires_at > new.deleted_at);
  return null;
end $$;

create trigger courier_endpoints_secrets_expire after update of deleted_at on courier_endpoints
  for each row when (old.deleted_at is null and new.deleted_at is not null)
  execute function courier_expire_deleted_secrets();

update courier_endpoint_secrets s set expires_at = e.deleted_at
  from courier_endpoints e
 where e.id = s.endpoint_id and e.deleted_at is not null
   and (s.expires_at is null or s.expires_at > e.deleted_at);

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
  secret_expiry timestamptz[],
  max_in_flight integer
)
language sql stable as $$
  select e.id, e.config_version, a.config_version, e.url, e.headers, e.retry_policy, a.retry_policy,
         array(select s.key from courier_endpoint_secrets s
               where s.endpoint_id = e.id and (s.expires_at is null or s.expires_at > p_now)
               order by s.expires_at is null desc, s.created_at desc, s.id desc),
         array(select s.expires_at from courier_endpoint_secrets s
               where s.endpoint_id = e.id and (s.expires_at is null or s.expires_at > p_now)
               order by s.expires_at is null desc, s.created_at desc, s.id desc),
         e.max_in_flight
  from courier_endpoints e join courier_applications a on a.id = e.app_id
  where e.id = any(p_ids)
$$;
