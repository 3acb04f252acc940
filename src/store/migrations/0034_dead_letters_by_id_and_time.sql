-- The dead letters' index by id carries when they died. A page bounded by that time (since,
-- until) read the range on the index by updated_at and sorted it: each page of a wide window cost
-- the rest of the window, and going through one of N dead letters O(N²) (25,000 of 50,000, among
-- two million deliveries: 4.9 s, a hundred pages). Now such a window is read in id order like the
-- rest, its bounds checked in the index: a page skips the dead letters outside the window without
-- reading their rows. A window of a few pages is still read on the index by updated_at and sorted
-- (see WINDOW_SORTED_PAGES in src/store/queries/dead-letter.ts). Built before the old index is
-- dropped, so the ACCESS EXCLUSIVE lock of the drop is held only to the commit; the build holds
-- writes to the deliveries (reads go on), about a quarter of a second per two million.
create index courier_deliveries_dead_by_id_and_time on courier_deliveries (endpoint_id, id, updated_at)
  where state in ('failed', 'expired');
drop index courier_deliveries_dead_by_id;
