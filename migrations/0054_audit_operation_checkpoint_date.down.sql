DROP TRIGGER audit_checkpoints_not_ahead ON audit_checkpoints;
DROP FUNCTION audit_checkpoint_not_ahead();
DROP INDEX audit_log_operation_id_idx;
