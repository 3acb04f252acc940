-- The delivery settings the operator (the admin token) set on an endpoint, for one URL: an
-- application's token sets maxInFlight and rateLimit up to these while the endpoint has that URL
-- (operator_limits_url), whether the operator raised them above the defaults or lowered them
-- below (a receiver that struggles). A token's lower value leaves them, so it may go back up to
-- the operator's. The operator's write that gives a setting sets it (a PUT sending it as the
-- endpoint has it, as a form read back, leaves the record as it was); one that sends it back to
-- its default (null, or left out of a creation or PUT) clears it; the operator's new URL keeps
-- them, for it. A token's new URL ends them, and so does one the previous release writes, which
-- knows neither these nor operator_limits_url; a value the previous release lowers on the same
-- URL leaves the record, up to which the token may raise it again. Null: none set, or set before
-- this release (a token is then bounded by the larger of the default and the endpoint's value,
-- as before). Changes the catalog alone.
alter table courier_endpoints
  add column operator_max_in_flight integer,
  add column operator_rate_limit integer,
  add column operator_limits_url text;
