-- The audit log's actor filter matches an email in any case (audit/query.go,
-- condActor: lower(actor_email) = lower(@actor)): the identity provider
-- writes Jane.Doe@Example.com, the bindings page shows jane.doe@example.com,
-- and both are Jane. The index on actor_email could not serve that
-- comparison; this one does, with seq for the keyset page as before. The
-- old index has no other reader and goes, so an append keeps the cost of
-- one actor index. audit_log keeps its triggers, and the runtime role its
-- rights (SELECT, INSERT): an index needs no grant.
--
-- The planner takes no statistics from a partial index's expression: it
-- guessed 0.5% of the log for any one address, and walked the whole log
-- backwards by seq rather than read the index. The statistics object
-- gives it lower(actor_email)'s own (ANALYZE and autovacuum fill it).
--
-- Building the index holds audit_log's SHARE lock: appends (and so every
-- change the console makes) wait for it, a few seconds per million rows.
DROP INDEX audit_log_actor_email_idx;
CREATE INDEX audit_log_actor_email_lower_idx ON audit_log (lower(actor_email), seq) WHERE actor_email <> '';
CREATE STATISTICS audit_log_actor_email_lower_stats ON (lower(actor_email)) FROM audit_log;
