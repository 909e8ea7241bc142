-- Retention terms (the policy file's [retention] section) are left out of
-- the replay policy version, so that a retention change does not void
-- waiting requests; until now each process purged by its own file's terms,
-- and an older replica restarting with shorter ones removed dead letters
-- earlier than the deployed terms keep them. The terms now have versions
-- of their own, kept as the replay policy's are (migrations 0032, 0033):
-- a process that starts with terms never active makes them the active
-- ones (a deploy); one whose terms were replaced since does not take them
-- back, and removes nothing (dlq/keeper.go); going back is a deliberate,
-- bounded rollback (console policy rollback --to VERSION).
CREATE TABLE retention_terms_versions (
    version       text        PRIMARY KEY,
    name          text        NOT NULL DEFAULT '',
    activated_at  timestamptz NOT NULL DEFAULT now(),
    activated_by  text        NOT NULL DEFAULT '',
    superseded_at timestamptz,
    superseded_by text        NOT NULL DEFAULT ''
);
COMMENT ON TABLE retention_terms_versions IS 'Retention terms versions that were active; the one with superseded_at NULL is active: the keeper of a process removes dead letters only by it. A replaced version is made active again only by a start within a rollback allowance (retention_terms_rollback).';
COMMENT ON COLUMN retention_terms_versions.name IS 'The policy file the terms were last made active from.';
COMMENT ON COLUMN retention_terms_versions.superseded_at IS 'When other terms were made active in their place (superseded_by: the process that did); NULL for the active terms alone.';
REVOKE DELETE, TRUNCATE ON retention_terms_versions FROM quarantine_runtime;
CREATE UNIQUE INDEX retention_terms_versions_one_in_force ON retention_terms_versions ((true)) WHERE superseded_at IS NULL;

-- The last rollback allowance for retention terms, as replay_policy_rollback
-- is for the rules: it expires, the one activation it allows uses it, and
-- a newer allowance or the activation of other terms ends it.
CREATE TABLE retention_terms_rollback (
    singleton  boolean     PRIMARY KEY DEFAULT true CHECK (singleton),
    version    text        NOT NULL REFERENCES retention_terms_versions (version),
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
COMMENT ON TABLE retention_terms_rollback IS 'One row: the last retention terms rollback allowance (console policy rollback --to naming retention terms). It lets the first process that starts with those terms before expires_at make them active once.';
REVOKE DELETE, TRUNCATE ON retention_terms_rollback FROM quarantine_runtime;
