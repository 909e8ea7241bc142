-- A replica gone without a word keeps its list for a day after its lease
-- ran out (dlq/ingest_watchers.go, watcherRemembered): a replica
-- crash-looping in a deploy that added a stream cannot be told from one
-- gone for good, and its streams' give-ups are not to be acked without a
-- row meanwhile. Only the comments change.
COMMENT ON TABLE ingest_watchers IS 'The streams each replica watches (DLQ_WATCH_STREAMS), per advisory capture stream; a row counts while its lease runs and for a day after (expires_at, renewed at every ingest check; removed when the replica stops).';
COMMENT ON COLUMN ingest_watchers.expires_at IS 'When the lease runs out unless renewed (PostgreSQL''s clock, for every replica alike); the list still counts for a day after, and is removed then by the next renewal of any replica.';
