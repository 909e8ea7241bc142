-- What a replay policy version and a retention terms version said, not
-- only when they were active (migrations 0032, 0035): an auditor asking
-- under which rules a request was approved, and an operator about to roll
-- back, read the version's content here. The content is the canonical
-- text the version hashes (replaypolicy Table.Canonical, Retention.Canonical),
-- so the database checks it against the version's name: no other text can
-- be recorded for it. It is written by the transaction that activates the
-- version (or, for a version active since before this migration, by the
-- next start of a process with its file), and never changed: the runtime
-- role may insert and read it, not update or remove it. Versions replaced
-- before this migration have none ("not recorded" on the Policy page).
CREATE TABLE replay_policy_contents (
    version     text        PRIMARY KEY REFERENCES replay_policy_versions (version),
    content     text        NOT NULL,
    recorded_at timestamptz NOT NULL DEFAULT now(),
    recorded_by text        NOT NULL,
    CONSTRAINT replay_policy_contents_hash CHECK (version = encode(sha256(convert_to(content, 'UTF8')), 'hex'))
);
COMMENT ON TABLE replay_policy_contents IS 'The canonical text of each replay policy version made active since migration 0039: its rules, class knobs, tightened error-class rules and generation limit. Insert-only.';
COMMENT ON COLUMN replay_policy_contents.content IS 'The text whose hex SHA-256 is the version (checked): encode(sha256(convert_to(content, ''UTF8'')), ''hex'') = version.';
COMMENT ON COLUMN replay_policy_contents.recorded_by IS 'The process (host-pid) whose activation recorded it.';
REVOKE UPDATE, DELETE, TRUNCATE ON replay_policy_contents FROM quarantine_runtime;

CREATE TABLE retention_terms_contents (
    version     text        PRIMARY KEY REFERENCES retention_terms_versions (version),
    content     text        NOT NULL,
    recorded_at timestamptz NOT NULL DEFAULT now(),
    recorded_by text        NOT NULL,
    CONSTRAINT retention_terms_contents_hash CHECK (version = encode(sha256(convert_to(content, 'UTF8')), 'hex'))
);
COMMENT ON TABLE retention_terms_contents IS 'The canonical text of each retention terms version made active since migration 0039: the defaults in force, the section''s periods and every rule''s. Insert-only.';
COMMENT ON COLUMN retention_terms_contents.content IS 'The text whose hex SHA-256 is the version (checked).';
COMMENT ON COLUMN retention_terms_contents.recorded_by IS 'The process (host-pid) whose activation recorded it.';
REVOKE UPDATE, DELETE, TRUNCATE ON retention_terms_contents FROM quarantine_runtime;
