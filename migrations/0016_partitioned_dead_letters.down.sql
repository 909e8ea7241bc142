-- Back to one unpartitioned dead_letters table (rows and ids kept) and
-- foreign keys from replay items and jobs. It fails when an item or job
-- names a dead letter retention has removed: delete those first.

DROP INDEX dead_letter_arrivals_hour_idx;
DROP INDEX dead_letter_arrivals_minute_idx;
DROP INDEX replay_requests_open_idx;
DROP INDEX replay_items_dead_letter_idx;
CREATE INDEX replay_items_dead_letter_idx ON replay_items (dead_letter_id);

DROP FUNCTION quarantine_dead_letter_partition_drop(text);
DROP FUNCTION quarantine_dead_letter_partition_empty(text);
DROP FUNCTION quarantine_dead_letter_partition_hold(text);
DROP FUNCTION quarantine_dead_letter_partition_busy(date);
DROP FUNCTION quarantine_dead_letter_partition_day(text);
DROP FUNCTION quarantine_dead_letter_partitions(timestamptz[]);
DROP FUNCTION quarantine_dead_letter_partition_make(date);
DROP FUNCTION quarantine_dead_letter_partition_name(date);

ALTER TABLE dead_letters RENAME TO dead_letters_partitioned;
CREATE TABLE dead_letters (LIKE dead_letters_partitioned
    INCLUDING DEFAULTS INCLUDING IDENTITY INCLUDING STORAGE INCLUDING COMPRESSION INCLUDING COMMENTS);
INSERT INTO dead_letters OVERRIDING SYSTEM VALUE SELECT * FROM dead_letters_partitioned;
SELECT setval(pg_get_serial_sequence('dead_letters', 'id'), last_value, is_called) FROM dead_letters_id_seq;
DROP TABLE dead_letters_partitioned;
DO $$ BEGIN
    EXECUTE format('ALTER SEQUENCE %s RENAME TO dead_letters_id_seq', pg_get_serial_sequence('dead_letters', 'id'));
END $$;
COMMENT ON TABLE dead_letters IS NULL;
COMMENT ON COLUMN dead_letters.id IS NULL;

ALTER TABLE dead_letters
    ADD CONSTRAINT dead_letters_pkey PRIMARY KEY (id),
    ADD CONSTRAINT dead_letters_status_check CHECK (status IN
        ('quarantined', 'replay_requested', 'replaying', 'replayed', 'replay_failed', 'needs_reconciliation', 'discarded', 'resolved')),
    ADD CONSTRAINT dead_letters_source_kind_check CHECK (source_kind IN ('dlq', 'advisory')),
    ADD CONSTRAINT dead_letters_source_key_check CHECK (source_key IS NOT NULL AND octet_length(source_key) = 32) NOT VALID,
    ADD CONSTRAINT dead_letters_bounds_check CHECK (octet_length(tenant) <= 128 AND octet_length(item_type) <= 256) NOT VALID;
CREATE UNIQUE INDEX dead_letters_source_key_idx ON dead_letters (dead_lettered_at, source_key);
CREATE INDEX dead_letters_unresolved_age_idx ON dead_letters (tenant, dead_lettered_at)
    WHERE status IN ('quarantined', 'replay_requested', 'replaying', 'replay_failed', 'needs_reconciliation');
CREATE INDEX dead_letters_tenant_time_idx ON dead_letters (tenant, dead_lettered_at, id);
CREATE INDEX dead_letters_dims_time_idx ON dead_letters (tenant, item_type, error_class, status, dead_lettered_at, id);
CREATE INDEX dead_letters_group_time_idx ON dead_letters (tenant, fingerprint, dead_lettered_at, id);
CREATE INDEX dead_letters_msg_id_idx ON dead_letters (tenant, left(msg_id, 256));
CREATE INDEX dead_letters_operation_id_idx ON dead_letters (tenant, left(operation_id, 256)) WHERE operation_id <> '';
CREATE INDEX dead_letters_correlation_id_idx ON dead_letters (tenant, left(correlation_id, 256)) WHERE correlation_id <> '';
CREATE INDEX dead_letters_error_trgm_idx ON dead_letters USING gin ((left(error, 1024)) gin_trgm_ops);
CREATE INDEX dead_letters_replay_of_idx ON dead_letters (replay_of) WHERE replay_of IS NOT NULL;
ALTER TABLE dead_letters SET (autovacuum_vacuum_insert_scale_factor = 0.01, autovacuum_vacuum_insert_threshold = 10000);
GRANT SELECT, INSERT, UPDATE, DELETE ON dead_letters TO quarantine_runtime;

ALTER TABLE replay_jobs DROP COLUMN dead_lettered_at;
ALTER TABLE replay_items DROP COLUMN dead_lettered_at;
ALTER TABLE replay_items ADD CONSTRAINT replay_items_dead_letter_id_fkey FOREIGN KEY (dead_letter_id) REFERENCES dead_letters (id);
ALTER TABLE replay_jobs ADD CONSTRAINT replay_jobs_dead_letter_id_fkey FOREIGN KEY (dead_letter_id) REFERENCES dead_letters (id);
