-- A rollback allowance (console policy rollback) is bounded. Before, it
-- cleared the version's superseded_at and stayed until used: months later
-- an old replica restarting with that version's file took the policy back
-- over the one active then. Now the allowance is one row of its own: it
-- expires (expires_at, an hour by default), the one activation it allows
-- uses it, and a newer allowance or the activation of another version ends
-- it (dlq/replay/policy_rollback.go). superseded_at is NULL for the active
-- version alone.
CREATE TABLE replay_policy_rollback (
    singleton  boolean     PRIMARY KEY DEFAULT true CHECK (singleton),
    version    text        NOT NULL REFERENCES replay_policy_versions (version),
    allowed_at timestamptz NOT NULL DEFAULT now(),
    allowed_by text        NOT NULL,
    audit_seq  bigint      NOT NULL,
    expires_at timestamptz NOT NULL,
    ended_at   timestamptz,
    ended_by   text        NOT NULL DEFAULT '',
    used       boolean     NOT NULL DEFAULT false,
    CHECK (expires_at > allowed_at),
    CHECK (NOT used OR ended_at IS NOT NULL)
);
COMMENT ON TABLE replay_policy_rollback IS 'One row: the last rollback allowance (console policy rollback). It lets the first process that starts with the version''s file before expires_at activate that version once; a newer allowance replaces the row.';
COMMENT ON COLUMN replay_policy_rollback.audit_seq IS 'The replay.policy_rollback_allowed audit entry that made the allowance (its operator and reason).';
COMMENT ON COLUMN replay_policy_rollback.ended_at IS 'When the allowance ended before it expired: used (used, by the process ended_by names, that activated the version) or ended by the activation of another version.';
REVOKE DELETE, TRUNCATE ON replay_policy_rollback FROM quarantine_runtime;

-- Allowances made before this migration never expired: the last one is
-- carried over with the hour it would have had (already expired when it is
-- older than that), and every version let be activated again is marked
-- replaced again, so that only an allowance in this table lets it back.
INSERT INTO replay_policy_rollback (version, allowed_at, allowed_by, audit_seq, expires_at)
    SELECT a.object_id, a.at, a.actor_subject, a.seq, a.at + interval '1 hour'
    FROM audit_log a
    JOIN replay_policy_versions v ON v.version = a.object_id AND v.superseded_at IS NULL
    WHERE a.action = 'replay.policy_rollback_allowed' AND a.outcome = 'ok'
      AND v.version NOT IN (SELECT version FROM replay_policy_active)
    ORDER BY a.seq DESC LIMIT 1;
UPDATE replay_policy_versions SET superseded_at = now(), superseded_by = 'migration 0033'
    WHERE superseded_at IS NULL AND version NOT IN (SELECT version FROM replay_policy_active);

-- At most one version is not replaced: the active one. A hand-made
-- "UPDATE ... SET superseded_at = NULL" (the runbook's rollback before
-- 0033) is refused rather than left as a permission without end.
CREATE UNIQUE INDEX replay_policy_versions_one_in_force ON replay_policy_versions ((true)) WHERE superseded_at IS NULL;
