-- Dropping the table drops its indexes and triggers; no trigger fires on DROP.
DROP TABLE audit_log;
DROP FUNCTION audit_log_reject_change();
