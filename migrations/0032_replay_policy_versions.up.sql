-- Every replay policy version that was ever active, and whether another
-- replaced it since. A process that starts makes its file's version the
-- active one (a deploy), unless that version was active before and was
-- superseded: a process of an older rollout that restarts (a crash, a
-- rescheduled pod, a `console worker` whose settings were not rolled)
-- does not take the active policy back, void the requests waiting under
-- the newer one and block those approved under it (dlq/replay/policy.go,
-- ActivatePolicy). Going back is deliberate: clearing superseded_at of a
-- version lets the next process started with its file activate it
-- (docs/runbook.md, "Roll the replay policy back").
CREATE TABLE replay_policy_versions (
    version       text        PRIMARY KEY,
    name          text        NOT NULL DEFAULT '',
    activated_at  timestamptz NOT NULL DEFAULT now(),
    activated_by  text        NOT NULL DEFAULT '',
    superseded_at timestamptz,
    superseded_by text        NOT NULL DEFAULT ''
);
COMMENT ON TABLE replay_policy_versions IS 'Replay policy versions that were active (replay_policy_active holds the one that is): a superseded version is not made active again by a process starting with its file, only after a deliberate rollback clears superseded_at.';
COMMENT ON COLUMN replay_policy_versions.activated_at IS 'When the version was last made active, and by which process (activated_by: host-pid).';
COMMENT ON COLUMN replay_policy_versions.superseded_at IS 'When another version was made active in its place (superseded_by: the process that did); NULL for the active version and for one an operator lets be activated again (a rollback).';
REVOKE DELETE, TRUNCATE ON replay_policy_versions FROM quarantine_runtime;

-- The history so far: the active version, and every other version an
-- audited activation named, superseded by the activation after it.
INSERT INTO replay_policy_versions (version, name, activated_at, activated_by)
    SELECT version, name, activated_at, activated_by FROM replay_policy_active;
INSERT INTO replay_policy_versions (version, name, activated_at, activated_by, superseded_at)
    SELECT DISTINCT ON (version) version, name, at, activated_by, superseded_at
    FROM (SELECT object_id AS version, coalesce(after->>'file', '') AS name, at, seq,
                 regexp_replace(actor_subject, '^replay-policy:', '') AS activated_by,
                 lead(at) OVER (ORDER BY seq) AS superseded_at
          FROM audit_log WHERE action = 'replay.policy_activated' AND outcome = 'ok') a
    WHERE superseded_at IS NOT NULL
    ORDER BY version, seq DESC
ON CONFLICT (version) DO NOTHING;
