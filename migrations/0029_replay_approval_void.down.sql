ALTER TABLE replay_approvals DROP COLUMN void_reason, DROP COLUMN voided_at;
