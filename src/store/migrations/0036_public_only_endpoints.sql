-- Endpoints that reach public addresses only. COURIER_ALLOW_PRIVATE_NETWORKS opens internal
-- addresses to the operator's endpoints; a URL a customer sets with an application's token (Svix's
-- app portal access) must not reach them, at save time (a literal address) or at delivery (what a
-- host name resolves to), so workers read the flag with the rest of the endpoint's configuration.
--
-- Endpoints saved before this release count as the operator's (false). Rows written without the
-- column from now on, by an API process of the previous release during a rolling upgrade, are
-- public-only: that release lets a token create endpoints, and cannot tell whose they are. Both
-- steps change the catalog alone.
alter table courier_endpoints add column public_only boolean not null default false;
alter table courier_endpoints alter column public_only set default true;

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
  max_in_flight integer,
  public_only boolean
)
language sql stable as $$
  select e.id, e.config_version, a.config_version, e.url, e.headers, e.retry_policy, a.retry_policy,
         array(select s.key from courier_endpoint_secrets s
               where s.endpoint_id = e.id and (s.expires_at is null or s.expires_at > p_now)
               order by s.expires_at is null desc, s.created_at desc, s.id desc),
         array(select s.expires_at from courier_endpoint_secrets s
               where s.endpoint_id = e.id and (s.expires_at is null or s.expires_at > p_now)
               order by s.expires_at is null desc, s.created_at desc, s.id desc),
         e.max_in_flight, e.public_only
  from courier_endpoints e join courier_applications a on a.id = e.app_id
  where e.id = any(p_ids)
$$;
