-- The group role quarantine_runtime is left in place: roles belong to the
-- whole server, and other databases may use it.
ALTER DEFAULT PRIVILEGES IN SCHEMA public REVOKE SELECT, INSERT, UPDATE, DELETE ON TABLES FROM quarantine_runtime;
ALTER DEFAULT PRIVILEGES IN SCHEMA public REVOKE USAGE, SELECT ON SEQUENCES FROM quarantine_runtime;
REVOKE ALL ON ALL TABLES IN SCHEMA public FROM quarantine_runtime;
REVOKE ALL ON ALL SEQUENCES IN SCHEMA public FROM quarantine_runtime;
REVOKE ALL ON SCHEMA public FROM quarantine_runtime;
DELETE FROM casbin_rule WHERE ptype = 'p' AND v0 = 'admin' AND v2 = 'sessions' AND v3 = 'revoke';
DROP TABLE user_sessions;
ALTER TABLE replay_approvals DROP COLUMN approver_email_verified;
ALTER TABLE replay_requests DROP COLUMN requester_email_verified;
ALTER TABLE audit_log DROP CONSTRAINT audit_log_field_bounds_check;
ALTER TABLE audit_log DROP COLUMN actor_email_verified;
DROP TABLE audit_checkpoints;
