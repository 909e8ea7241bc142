-- Every replica of a console pulls from the one advisory consumer, so it
-- receives the advisories of every stream any replica watches, not only
-- of those its own DLQ_WATCH_STREAMS names. Each replica now announces its
-- list here, with a lease it renews at every check (dlq/ingest_watchers.go),
-- so that an advisory of a stream it does not watch is handed back while
-- a live replica watches that stream (a rolling deploy that adds it),
-- passed over when none does (a stream taken off the list), and the
-- advisory subjects of streams no live replica watches are taken off the
-- advisory stream, without replicas on two lists undoing each other.
CREATE TABLE ingest_watchers (
    advisory_stream text        NOT NULL,
    replica         text        NOT NULL,
    streams         text[]      NOT NULL,
    expires_at      timestamptz NOT NULL,
    PRIMARY KEY (advisory_stream, replica)
);
COMMENT ON TABLE ingest_watchers IS 'The streams each running replica watches (DLQ_WATCH_STREAMS), per advisory capture stream; a row counts while its lease runs (expires_at, renewed at every ingest check, removed when the replica stops).';
COMMENT ON COLUMN ingest_watchers.replica IS 'The replica''s name: its host and a random part drawn at start.';
COMMENT ON COLUMN ingest_watchers.expires_at IS 'When the list stops counting unless renewed (PostgreSQL''s clock, for every replica alike); rows an hour past it are removed by the next renewal of any replica.';

-- The runtime role announces, renews and withdraws its own row, and reads
-- everyone's.
GRANT SELECT, INSERT, UPDATE, DELETE ON ingest_watchers TO quarantine_runtime;
