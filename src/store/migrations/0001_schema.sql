-- Courier's schema. Times are timestamptz and always come from the application's clock
-- (passed as parameters), never from now(), so the engine runs on virtual time in tests.

create table courier_applications (
  id text collate "C" primary key,
  uid text unique,
  name text not null,
  rate_limit integer check (rate_limit > 0),
  retry_policy jsonb,
  metadata jsonb not null default '{}',
  -- bumped on every change; workers cache configuration by it
  config_version bigint not null default 1,
  created_at timestamptz not null,
  updated_at timestamptz not null,
  deleted_at timestamptz
);

create table courier_endpoints (
  id text collate "C" primary key,
  app_id text collate "C" not null references courier_applications (id),
  uid text,
  url text not null,
  description text not null default '',
  -- enabled: delivering; disabled: switched off by its owner; paused: stopped by Courier
  -- after a streak of permanent failures (see status_reason).
  status text not null default 'enabled' check (status in ('enabled', 'disabled', 'paused')),
  status_reason text,
  event_types text[],
  channels text[],
  rate_limit integer not null check (rate_limit > 0),
  max_in_flight integer not null check (max_in_flight > 0),
  retry_policy jsonb,
  headers jsonb not null default '{}',
  metadata jsonb not null default '{}',
  version integer not null default 1,
  -- bumped on every change (its secrets' too); workers cache configuration by it
  config_version bigint not null default 1,
  created_at timestamptz not null,
  updated_at timestamptz not null,
  deleted_at timestamptz
);
create unique index courier_endpoints_uid on courier_endpoints (app_id, uid) where deleted_at is null;
create index courier_endpoints_app on courier_endpoints (app_id, id) where deleted_at is null;

-- Signing secrets: the current one (expires_at null) and previous ones during a rotation's grace period.
create table courier_endpoint_secrets (
  id bigint generated always as identity primary key,
  endpoint_id text collate "C" not null references courier_endpoints (id),
  key text not null,
  created_at timestamptz not null,
  expires_at timestamptz
);
create index courier_endpoint_secrets_endpoint on courier_endpoint_secrets (endpoint_id);

-- The hot, small per-endpoint scheduling row: every claim and completion touches it, so it is
-- kept apart from the endpoint's configuration. Its row lock serialises claims for one endpoint
-- across all worker processes, which is what makes the in-flight cap and rate limit global.
create table courier_endpoint_queues (
  endpoint_id text collate "C" primary key references courier_endpoints (id),
  active boolean not null,
  max_in_flight integer not null,
  rate_limit integer not null,
  in_flight integer not null default 0 check (in_flight >= 0),
  -- earliest next_attempt_at among its pending deliveries (null: nothing pending)
  next_due_at timestamptz,
  -- rate limit over-spent until then
  blocked_until timestamptz,
  -- claims per 100 ms slot over the last 12 slots (newest last); rl_slot is the newest slot's number
  rl_slot bigint not null default 0,
  rl_counts integer[] not null default '{0,0,0,0,0,0,0,0,0,0,0,0}',
  failure_streak integer not null default 0
);
create index courier_endpoint_queues_due on courier_endpoint_queues (next_due_at) where active;

create table courier_messages (
  id text collate "C" primary key,
  app_id text collate "C" not null references courier_applications (id),
  event_type text not null,
  event_id text,
  payload bytea not null,
  channels text[],
  tags text[],
  created_at timestamptz not null
);
create unique index courier_messages_event_id on courier_messages (app_id, event_id) where event_id is not null;
create index courier_messages_app on courier_messages (app_id, id);

-- One row per message x endpoint. The payload stays in courier_messages so this hot row stays small.
create table courier_deliveries (
  id bigint generated always as identity primary key,
  message_id text collate "C" not null references courier_messages (id),
  endpoint_id text collate "C" not null references courier_endpoints (id),
  state text not null check (state in ('pending', 'in_flight', 'delivered', 'failed', 'expired', 'held')),
  attempts integer not null default 0,
  next_attempt_at timestamptz not null,
  give_up_at timestamptz,
  lease_owner text,
  lease_expires_at timestamptz,
  last_error text,
  trigger smallint not null default 0,
  created_at timestamptz not null,
  updated_at timestamptz not null,
  unique (message_id, endpoint_id)
);
-- The claim walks this per endpoint: its cost does not depend on how much is scheduled for later.
create index courier_deliveries_due on courier_deliveries (endpoint_id, next_attempt_at) where state = 'pending';
create index courier_deliveries_leases on courier_deliveries (lease_expires_at) where state = 'in_flight';
create index courier_deliveries_dead on courier_deliveries (endpoint_id, updated_at) where state in ('failed', 'expired');
create index courier_deliveries_held on courier_deliveries (endpoint_id) where state = 'held';

create table courier_attempts (
  id text collate "C" primary key,
  delivery_id bigint not null,
  message_id text collate "C" not null,
  endpoint_id text collate "C" not null,
  number integer not null,
  trigger smallint not null default 0,
  url text not null,
  started_at timestamptz not null,
  duration_ms integer not null,
  status_code integer,
  failure_kind text,
  response_headers jsonb,
  response_body text,
  decision text not null check (decision in ('delivered', 'retry', 'failed', 'expired')),
  delay_ms bigint,
  reason text,
  detail text not null
);
create index courier_attempts_endpoint on courier_attempts (endpoint_id, id);
create index courier_attempts_message on courier_attempts (message_id, id);

-- Operational events (endpoint.paused, …) kept for operators and forwarded to the operator webhook.
create table courier_operational_events (
  id text collate "C" primary key,
  type text not null,
  app_id text,
  endpoint_id text,
  data jsonb not null,
  created_at timestamptz not null
);
