-- Retention removes dead letters; the DLQ stream may still hold their
-- messages (a stream without an age limit holds them all), and delivers
-- them again to a consumer made again (the console makes a missing one
-- again, from the first message the stream holds). Their rows were gone,
-- so the source key's unique index let them in as new quarantined dead
-- letters: a discarded message back in the inbox, a replayed one
-- replayable again where the ledger does not guard it (manual,
-- revalidate). Now retention keeps the source key of each dead letter it
-- removes, in the run's transaction, and ingest leaves out a message whose
-- key is there, as it leaves out one stored already: the run's audit row
-- says where it went.
CREATE TABLE dead_letters_purged (
    dead_lettered_at timestamptz NOT NULL,
    source_key bytea NOT NULL CHECK (octet_length(source_key) = 32),
    PRIMARY KEY (dead_lettered_at, source_key)
);
COMMENT ON TABLE dead_letters_purged IS 'Source keys of the dead letters retention removed (dlq/retention.go): ingest does not store their messages again (dlq/store_copy.go, storedKeys). 70-odd bytes a dead letter removed, index included; the owner may trim keys older than the oldest message the DLQ and advisory streams still hold.';
-- Append-only for the runtime role: what retention removed stays removed.
REVOKE UPDATE, DELETE ON dead_letters_purged FROM quarantine_runtime;
