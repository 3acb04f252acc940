-- An endpoint's dead letters by delivery id. Their listing (`GET …/dead-letter`, `courier dlq
-- list`) and the dead-letter replay (`…/recover`, `…/dead-letter/replay`, `courier dlq replay`)
-- page in id order, each page after the last one's highest id; the index was by the time they
-- died (updated_at), so each page read every dead letter of the endpoint past the last page and
-- sorted them to take its first few hundred: going through N of them cost O(N²). Now a page is
-- read in index order and stops at its limit (with sorting priced out: see IN_ID_ORDER in
-- src/store/queries/dead-letter.ts). Their time filters (since, until) are tested on the rows
-- a page reads. Built while the migration holds the table: only dead rows are indexed, but the
-- whole table is read.
drop index courier_deliveries_dead;
create index courier_deliveries_dead on courier_deliveries (endpoint_id, id) where state in ('failed', 'expired');
