CREATE TABLE ingest_prefixes (
    stream     text        NOT NULL,
    prefix     text        NOT NULL,
    first_used timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (stream, prefix)
);
COMMENT ON TABLE ingest_prefixes IS 'The DLQ_SUBJECT_PREFIXes this deployment''s consoles used on each DLQ stream: a stream recording one of them is this deployment''s (a prefix change), one recording another is refused.';
REVOKE UPDATE, DELETE ON ingest_prefixes FROM quarantine_runtime;
