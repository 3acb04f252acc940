-- The dead letters' index by id carries when they died and when they were made. A page bounded by
-- when they died (since, until) read the range on the index by updated_at and sorted it: each page
-- of a wide window cost the rest of the window, and going through one of N dead letters O(N²)
-- (25,000 of 50,000, among two million deliveries: 4.4 s in `npm run bench:dead-letters`, a
-- hundred pages). Now such a window is read in id order like the rest, its bounds checked in the
-- index: a page skips the dead letters outside the window without reading their rows. A window of
-- a few pages is still read on the index by updated_at and sorted (see WINDOW_SORTED_PAGES in
-- src/store/queries/dead-letter.ts). A recovery by publish time (`…/recover`) passes by, in the
-- index, the dead letters made over an hour before its range, whose messages were published
-- before it too (a delivery is made no earlier than its message), instead of reading each one's
-- message. The build holds writes to the deliveries (reads go on), about a quarter of a second
-- per two million. Migration 0033's index by (endpoint_id, id), which this one covers, stays:
-- every pending migration runs in one transaction, and its drop would wait for an ACCESS
-- EXCLUSIVE lock with the build's SHARE lock held, queueing every reader behind it and
-- deadlocking with one that then writes.
create index courier_deliveries_dead_by_id_and_time on courier_deliveries (endpoint_id, id, updated_at, created_at)
  where state in ('failed', 'expired');
