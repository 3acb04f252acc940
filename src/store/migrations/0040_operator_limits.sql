-- The delivery settings the operator (the admin token) set on an endpoint, for its URL: an
-- application's token sets maxInFlight and rateLimit up to these while the URL stays, whether the
-- operator raised them above the defaults or lowered them below (a receiver that struggles). A
-- token's lower value leaves them, so it may go back up to the operator's; a token's new URL, or
-- the operator's write that sends a setting back to its default, clears them. Null: none set, or
-- set before this release (a token is then bounded by the larger of the default and the
-- endpoint's value, as before). Changes the catalog alone.
alter table courier_endpoints
  add column operator_max_in_flight integer,
  add column operator_rate_limit integer;
