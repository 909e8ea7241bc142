-- Ingest that no dead letter can stop (docs/header-contract.md, "Any field,
-- any size, any bytes"). A B-tree refuses an entry over about 2,700 bytes,
-- so no index may hold a producer's value unbounded:
--   * tenant and item_type are bounded where they are made (128 and 256
--     bytes; a longer one is stored as a bounded key, see dlq.BoundedKey);
--   * message, operation and correlation ids are stored whole and indexed by
--     their first 256 characters (at most 1,024 bytes), the row deciding;
--   * the unique keys that must be exact (the source key, the replay
--     ledger's) use a SHA-256.
-- (The audit log's message ids are bounded where they are written: 0006.)
-- Every index here leads with tenant where it can (see DESIGN "Scale-out").

-- quarantine_key is the exact, bounded key of a text: its SHA-256. It is
-- IMMUTABLE because the database encoding (UTF-8) cannot change under it.
CREATE FUNCTION quarantine_key(v text) RETURNS bytea
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    RETURN sha256(convert_to(v, 'UTF8'));
COMMENT ON FUNCTION quarantine_key(text) IS 'SHA-256 of the UTF-8 bytes: a 32-byte key for unique indexes on producer text of any length.';

-- ---------------------------------------------------------------------------
-- dead_letters: flags, the raw header block, and a source key that survives
-- a stream being made again.
-- ---------------------------------------------------------------------------

ALTER TABLE dead_letters
    ADD COLUMN flags        text[] NOT NULL DEFAULT '{}',
    ADD COLUMN header_block bytea,
    ADD COLUMN delivery     text   NOT NULL DEFAULT '',
    ADD COLUMN source_key   bytea,
    ALTER COLUMN source_seq DROP NOT NULL;

COMMENT ON COLUMN dead_letters.flags IS 'Codes of what was wrong or unusual on arrival (oversized:<field>, implausible:<field>, not_utf8:<field>, header_line_skipped, raw_form, ...); malformed_reasons holds a sentence for each. See docs/header-contract.md.';
COMMENT ON COLUMN dead_letters.header_block IS 'The NATS header block exactly as the stream stored it, when the ingester read it (the client could not; advisory originals; raw forms). NULL: headers holds every header as the client read it.';
COMMENT ON COLUMN dead_letters.delivery IS 'The stream message the row was made from: "<stream> #<seq> stored <time>" (the DLQ message, or the captured advisory), or "<stream> unreadable delivery <random>". Empty on rows stored before migration 0008.';
COMMENT ON COLUMN dead_letters.source_key IS 'SHA-256 of delivery: unique (with dead_lettered_at, which is part of the delivery), so a redelivery never makes a second row, and a stream made again (sequences restarting at 1) never collides with the old one. NULL on rows stored before migration 0008.';
COMMENT ON COLUMN dead_letters.source_seq IS 'Sequence of the message in source_stream; NULL when the delivery''s metadata could not be read.';
COMMENT ON COLUMN dead_letters.malformed IS 'True when anything was flagged on arrival (flags is not empty).';

-- Rows from before this migration keep no source key (their deliveries are
-- acked); every new row has one. NOT VALID: old rows are not checked.
ALTER TABLE dead_letters ADD CONSTRAINT dead_letters_source_key_check
    CHECK (source_key IS NOT NULL AND octet_length(source_key) = 32) NOT VALID;
-- dead_lettered_at leads so that inserts land at the right edge of the index
-- (the stored time grows with the stream): a SHA-256 alone scatters them,
-- about six times the cost per row. It is part of the delivery, so the pair
-- is unique exactly when the key is; and a table partitioned by
-- dead_lettered_at can keep this index as it is.
CREATE UNIQUE INDEX dead_letters_source_key_idx ON dead_letters (dead_lettered_at, source_key);
ALTER TABLE dead_letters DROP CONSTRAINT dead_letters_source_key;

-- The bounds the ingester keeps, as constraints: a bug that let a long
-- value through fails its insert here (and the record is stored in its raw
-- form) instead of deep in an index.
ALTER TABLE dead_letters ADD CONSTRAINT dead_letters_bounds_check
    CHECK (octet_length(tenant) <= 128 AND octet_length(item_type) <= 256) NOT VALID;

-- Id lookups through bounded prefixes (queries say left(col, 256) = left($1, 256) AND col = $1).
DROP INDEX dead_letters_msg_id_idx;
DROP INDEX dead_letters_operation_id_idx;
DROP INDEX dead_letters_correlation_id_idx;
CREATE INDEX dead_letters_msg_id_idx ON dead_letters (tenant, left(msg_id, 256));
CREATE INDEX dead_letters_operation_id_idx ON dead_letters (tenant, left(operation_id, 256)) WHERE operation_id <> '';
CREATE INDEX dead_letters_correlation_id_idx ON dead_letters (tenant, left(correlation_id, 256)) WHERE correlation_id <> '';

-- ---------------------------------------------------------------------------
-- The replay ledger: "already replayed" stays exact for ids of any length.
-- ---------------------------------------------------------------------------

DROP INDEX replay_ledger_dedupe_key;
DROP INDEX replay_ledger_operation_key;
DROP INDEX replay_ledger_msg_idx;
CREATE UNIQUE INDEX replay_ledger_dedupe_key ON replay_ledger (tenant, quarantine_key(msg_id)) WHERE class = 'dedupe';
CREATE UNIQUE INDEX replay_ledger_operation_key ON replay_ledger (tenant, quarantine_key(operation_id)) WHERE class = 'same_operation';
CREATE INDEX replay_ledger_msg_idx ON replay_ledger (tenant, left(msg_id, 256));
