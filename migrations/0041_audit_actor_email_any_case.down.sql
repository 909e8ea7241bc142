DROP STATISTICS audit_log_actor_email_lower_stats;
DROP INDEX audit_log_actor_email_lower_idx;
CREATE INDEX audit_log_actor_email_idx ON audit_log (actor_email, seq) WHERE actor_email <> '';
