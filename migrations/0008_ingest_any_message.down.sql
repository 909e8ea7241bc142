-- Back to unbounded id indexes and the (stream, sequence, consumer) source
-- key. It fails if rows now hold ids too long for those indexes, or two rows
-- share a stream position (a stream made again): resolve them first.

DROP INDEX replay_ledger_msg_idx;
DROP INDEX replay_ledger_operation_key;
DROP INDEX replay_ledger_dedupe_key;
CREATE UNIQUE INDEX replay_ledger_dedupe_key ON replay_ledger (tenant, msg_id) WHERE class = 'dedupe';
CREATE UNIQUE INDEX replay_ledger_operation_key ON replay_ledger (tenant, operation_id) WHERE class = 'same_operation';
CREATE INDEX replay_ledger_msg_idx ON replay_ledger (tenant, msg_id);

DROP INDEX dead_letters_correlation_id_idx;
DROP INDEX dead_letters_operation_id_idx;
DROP INDEX dead_letters_msg_id_idx;
CREATE INDEX dead_letters_msg_id_idx ON dead_letters (msg_id);
CREATE INDEX dead_letters_operation_id_idx ON dead_letters (operation_id) WHERE operation_id <> '';
CREATE INDEX dead_letters_correlation_id_idx ON dead_letters (correlation_id) WHERE correlation_id <> '';

ALTER TABLE dead_letters DROP CONSTRAINT dead_letters_bounds_check;
UPDATE dead_letters SET source_seq = 0 WHERE source_seq IS NULL;
ALTER TABLE dead_letters ADD CONSTRAINT dead_letters_source_key UNIQUE (source_stream, source_seq, source_consumer);
DROP INDEX dead_letters_source_key_idx;
ALTER TABLE dead_letters DROP CONSTRAINT dead_letters_source_key_check;
ALTER TABLE dead_letters
    ALTER COLUMN source_seq SET NOT NULL,
    DROP COLUMN source_key,
    DROP COLUMN delivery,
    DROP COLUMN header_block,
    DROP COLUMN flags;
COMMENT ON COLUMN dead_letters.malformed IS NULL;
COMMENT ON COLUMN dead_letters.source_seq IS NULL;

DROP FUNCTION quarantine_key(text);
