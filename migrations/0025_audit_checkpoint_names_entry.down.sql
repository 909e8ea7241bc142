DROP TRIGGER audit_checkpoints_names_entry ON audit_checkpoints;
DROP FUNCTION audit_checkpoint_names_entry();
