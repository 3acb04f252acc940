-- Operational events reach the operator webhook through a relay instead of being published in the
-- transaction that records them. That publish took the operator endpoint's rows in the middle of a
-- pause's or a completion's locks, out of the order every other writer takes them, and could
-- deadlock with a completion of the operator's own deliveries. An event is now recorded with
-- relayed = false when a worker has an operator webhook to send it to; the relay publishes what is
-- not relayed yet and marks it, in one transaction of its own (the event id is the message's
-- eventId, so an event published twice is sent once).
--
-- The events recorded before this migration were published when they were recorded: true. A
-- constant default needs no rewrite of the table.
alter table courier_operational_events add column relayed boolean not null default true;
create index courier_operational_events_unrelayed on courier_operational_events (id) where not relayed;
