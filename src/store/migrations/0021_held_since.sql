-- When an endpoint stopped being enabled (paused by Courier, or disabled by its owner): on
-- resume, the time its deliveries waited held is given back to their retry windows, so that a
-- delivery held past its give_up_at is retried as it would have been, not given one attempt.
-- Endpoints held when this runs count from their last update, the nearest instant known.
alter table courier_endpoints add column held_since timestamptz;
update courier_endpoints set held_since = updated_at where status <> 'enabled';
