-- The endpoint configuration a worker caches now carries the endpoint's in-flight cap.
--
-- A worker lets the completions of a quiet spell wait a little to share one write, and a waiting
-- completion keeps its endpoint's in-flight slot taken. With the cap at hand the worker waits
-- only for endpoints far from it, and writes at once for one whose slots it needs back. The cap
-- is a column of courier_endpoints, so changing it bumps config_version and refreshes the cache.
--
-- The result gains a column, which create or replace cannot do. Workers of the previous release
-- read the result with select * and ignore the new column.

drop function courier_endpoint_configs(text[], timestamptz);

create function courier_endpoint_configs(p_ids text[], p_now timestamptz)
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
               order by s.expires_at is null desc, s.created_at desc),
         array(select s.expires_at from courier_endpoint_secrets s
               where s.endpoint_id = e.id and (s.expires_at is null or s.expires_at > p_now)
               order by s.expires_at is null desc, s.created_at desc),
         e.max_in_flight
  from courier_endpoints e join courier_applications a on a.id = e.app_id
  where e.id = any(p_ids)
$$;
