DROP FUNCTION quarantine_purged_keys_trim(text, bigint, integer);
DROP FUNCTION quarantine_delivery_position(text);
DROP INDEX dead_letters_purged_stream_idx;
ALTER TABLE dead_letters_purged DROP COLUMN stream, DROP COLUMN stream_seq;
COMMENT ON TABLE dead_letters_purged IS 'Source keys of the dead letters retention removed (dlq/retention.go): ingest does not store their messages again (dlq/store_copy.go, storedKeys). 70-odd bytes a dead letter removed, index included; the owner may trim keys older than the oldest message the DLQ and advisory streams still hold.';
