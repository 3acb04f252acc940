-- Whether the operator (the admin token) holds a paused or disabled endpoint: then only the admin
-- token enables it again, not the customer's application token (Svix's app portal access). Set by
-- the operator's pause or disable, even of an endpoint already held (the hold becomes the
-- operator's), and on an endpoint the operator creates disabled. A resume leaves it: it is read only while the endpoint is held, and a hold from an
-- enabled endpoint sets it anew, so this release and the previous one resume alike. Holds made
-- before this release count as the customer's. Changes the catalog alone.
alter table courier_endpoints add column held_by_operator boolean not null default false;
