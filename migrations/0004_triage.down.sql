DROP TRIGGER dead_letter_triage_insert ON dead_letters;
DROP TRIGGER dead_letter_triage_update ON dead_letters;
DROP TRIGGER dead_letter_triage_delete ON dead_letters;
DROP FUNCTION dead_letter_triage_apply();
DROP TABLE dead_letter_groups;
DROP TABLE dead_letter_arrivals_minute;
DROP TABLE dead_letter_arrivals;
DROP FUNCTION dead_letter_unresolved(text);

ALTER TABLE dead_letters RESET (autovacuum_vacuum_insert_scale_factor, autovacuum_vacuum_insert_threshold);

DROP INDEX dead_letters_error_trgm_idx;
DROP INDEX dead_letters_correlation_id_idx;
DROP INDEX dead_letters_operation_id_idx;
DROP INDEX dead_letters_msg_id_idx;
DROP INDEX dead_letters_group_time_idx;
DROP INDEX dead_letters_dims_time_idx;
DROP INDEX dead_letters_tenant_time_idx;

-- pg_trgm stays: other schemas may use it, and dropping it needs more rights
-- than creating it did.
