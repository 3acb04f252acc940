-- What the HTTP API adds: API tokens, event types, idempotency keys.

-- API tokens. Only a SHA-256 hash of each token is kept: a database dump grants no access.
create table courier_api_tokens (
  id bigint generated always as identity primary key,
  -- 'admin' for the token generated on first start; unique so concurrent first starts make one.
  name text not null unique,
  token_hash bytea not null unique check (length(token_hash) = 32),
  created_at timestamptz not null
);

-- Event types are documentation and filters only: publishing never requires one to exist.
create table courier_event_types (
  name text collate "C" primary key,
  description text not null default '',
  archived boolean not null default false,
  deprecated boolean not null default false,
  schemas jsonb,
  created_at timestamptz not null,
  updated_at timestamptz not null
);

-- The first response to each (token scope, idempotency-key, method, path), replayed on repeats.
-- status is null while the first request is still being handled (locked until locked_until).
create table courier_idempotency_keys (
  scope text not null,
  key text not null,
  method text not null,
  path text not null,
  fingerprint text not null,
  status integer,
  content_type text,
  body text,
  locked_until timestamptz not null,
  expires_at timestamptz not null,
  primary key (scope, key, method, path)
);
create index courier_idempotency_keys_expiry on courier_idempotency_keys (expires_at);

