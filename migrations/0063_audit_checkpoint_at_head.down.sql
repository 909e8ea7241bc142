DROP TRIGGER audit_checkpoints_at_head ON audit_checkpoints;
DROP FUNCTION audit_checkpoint_at_head();
