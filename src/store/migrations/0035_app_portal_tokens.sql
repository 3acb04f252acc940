-- Tokens that open one application's part of the API (Svix's app portal access): handed to the
-- application's owner, a customer, to manage its endpoints and see its deliveries. As for the admin
-- token, only a SHA-256 hash is kept. Rows of a deleted application go with it; expired ones are
-- deleted as new tokens are made.
create table courier_app_tokens (
  id bigint generated always as identity primary key,
  app_id text collate "C" not null references courier_applications (id) on delete cascade,
  token_hash bytea not null unique check (length(token_hash) = 32),
  -- Svix's AppPortalCapability names: ViewBase, ViewEndpointSecret, ManageEndpointSecret,
  -- ManageTransformations, CreateAttempts, ManageEndpoint.
  capabilities text[] not null,
  session_id text,
  created_at timestamptz not null,
  expires_at timestamptz not null
);
create index courier_app_tokens_app on courier_app_tokens (app_id, session_id);
create index courier_app_tokens_expiry on courier_app_tokens (expires_at);
