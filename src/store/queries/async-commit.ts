/**
 * A FROM item that makes the statement's own transaction commit without waiting for its WAL flush
 * (set_config(..., true) lasts until that commit). For claims and completions: if the server
 * crashes within the flush delay (wal_writer_delay, 200 ms by default; up to three of them), the
 * most recent claims and completions are undone together, in order, and the deliveries they
 * touched are sent again (at least once; the forgotten attempts are not in the log). A group
 * publish commits this way too, but is accepted only after a flush barrier (publishUnflushed): an
 * accepted message is never lost.
 *
 * Why: a commit under load waits milliseconds for its flush, holding the endpoints' queue rows, so
 * publishes and claims queue up behind it (measured at 1,000 messages/s: tens of milliseconds).
 */
export const ASYNC_COMMIT = `set_config('synchronous_commit', 'off', true)`;
