DELETE FROM casbin_rule WHERE ptype = 'p' AND ((v2 = 'replay:*' AND v3 IN ('stop', 'reconcile')) OR (v2 = 'deadletter' AND v3 = 'fix'));
DROP TABLE fix_markers;

DROP INDEX dead_letters_replay_of_idx;
ALTER TABLE dead_letters DROP COLUMN generation, DROP COLUMN replay_of;
DROP INDEX dead_letters_unresolved_age_idx;
CREATE INDEX dead_letters_unresolved_age_idx ON dead_letters (tenant, dead_lettered_at)
    WHERE status IN ('quarantined', 'replay_requested', 'replaying', 'replay_failed');
CREATE OR REPLACE FUNCTION dead_letter_unresolved(status text) RETURNS boolean
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN status IN ('quarantined', 'replay_requested', 'replaying', 'replay_failed');
UPDATE dead_letters SET status = 'replaying' WHERE status = 'needs_reconciliation';
ALTER TABLE dead_letters DROP CONSTRAINT dead_letters_status_check;
ALTER TABLE dead_letters ADD CONSTRAINT dead_letters_status_check CHECK (status IN
    ('quarantined', 'replay_requested', 'replaying', 'replayed', 'replay_failed', 'discarded', 'resolved'));

ALTER TABLE replay_requests DROP COLUMN reconciliation_note, DROP COLUMN rate_next;
UPDATE replay_requests SET status = 'done' WHERE status = 'done_with_problems';
ALTER TABLE replay_requests DROP CONSTRAINT replay_requests_status_check;
ALTER TABLE replay_requests ADD CONSTRAINT replay_requests_status_check CHECK (status IN
    ('draft', 'pending_approval', 'approved', 'running', 'done', 'rejected', 'cancelled', 'void'));

DROP INDEX replay_jobs_ready_idx;
CREATE INDEX replay_jobs_ready_idx ON replay_jobs (not_before, id) WHERE state IN ('pending', 'claimed', 'unknown');
ALTER TABLE replay_jobs DROP COLUMN deferrals, DROP COLUMN first_attempt_at;
ALTER TABLE replay_jobs DROP CONSTRAINT replay_jobs_state_check;
UPDATE replay_jobs SET state = 'published', duplicate = (state = 'suppressed_duplicate') WHERE state IN ('replayed', 'suppressed_duplicate');
UPDATE replay_jobs SET state = 'pending' WHERE state = 'deferred';
UPDATE replay_jobs SET state = 'unknown' WHERE state = 'needs_reconciliation';
ALTER TABLE replay_jobs ADD CONSTRAINT replay_jobs_state_check CHECK (state IN
    ('pending', 'claimed', 'unknown', 'published', 'skipped', 'failed', 'blocked', 'cancelled'));
COMMENT ON COLUMN replay_jobs.state IS 'unknown: published but the PubAck was lost or timed out; retried with the same Nats-Msg-Id, never a new one.';
COMMENT ON COLUMN replay_jobs.duplicate IS 'The PubAck said Duplicate: JetStream suppressed it as a repeat of the same Nats-Msg-Id (not a fresh publish).';
