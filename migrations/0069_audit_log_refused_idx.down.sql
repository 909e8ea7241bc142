DROP INDEX audit_log_refused_idx;
