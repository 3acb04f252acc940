-- Svix's event type feature flags: an event type with flags is shown to an application's token
-- (a customer's) only when the token was made with one of them; the admin token sees every one.
-- Used to keep a beta or a plan's event types out of other customers' catalogue.
--
-- null: no flags, shown to every token. A token an earlier release makes during a rolling upgrade
-- holds no flags (the default); an event type it writes keeps its flags (its update names the
-- columns it sets). Until the rollout ends, an earlier release's API still shows every event type
-- to every token. Both steps change the catalog alone.
alter table courier_event_types add column feature_flags text[];
alter table courier_app_tokens add column feature_flags text[] not null default '{}';
