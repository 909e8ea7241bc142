DROP INDEX dead_letters_msg_id_idx;
DROP INDEX dead_letters_operation_id_idx;
DROP INDEX dead_letters_correlation_id_idx;
CREATE INDEX dead_letters_msg_id_idx ON dead_letters (tenant, left(msg_id, 256));
CREATE INDEX dead_letters_operation_id_idx ON dead_letters (tenant, left(operation_id, 256)) WHERE operation_id <> '';
CREATE INDEX dead_letters_correlation_id_idx ON dead_letters (tenant, left(correlation_id, 256)) WHERE correlation_id <> '';
