-- The DLQ_SUBJECT_PREFIXes this deployment's consoles have used on each
-- DLQ stream (dlq/ingest_dlq_owner.go). The DLQ stream records its
-- deployment's prefix in its metadata; a console whose prefix differs
-- takes the stream for its own only when its database has used the
-- recorded one (a DLQ_SUBJECT_PREFIX change): a second deployment on the
-- NATS account, with a database of its own, left on the default
-- DLQ_STREAM, is refused instead of sharing the stream's durable.
CREATE TABLE ingest_prefixes (
    stream     text        NOT NULL,
    prefix     text        NOT NULL,
    first_used timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (stream, prefix)
);
COMMENT ON TABLE ingest_prefixes IS 'The DLQ_SUBJECT_PREFIXes this deployment''s consoles used on each DLQ stream: a stream recording one of them is this deployment''s (a prefix change), one recording another is refused.';

-- The runtime role records and reads prefixes; none is ever changed or removed.
REVOKE UPDATE, DELETE ON ingest_prefixes FROM quarantine_runtime;
