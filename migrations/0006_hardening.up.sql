-- Hardening (docs/access.md, "Database roles" and "Audit checkpoints"):
--
--   * a runtime role the web console and the replay workers connect as, that
--     may read and append the audit log but never change it, and that owns
--     nothing (no DDL);
--   * signed checkpoints of the audit chain's head;
--   * bounds on every audited text field, and whether the actor's email was
--     verified by the identity provider;
--   * server-side records of sign-in sessions, so an admin can end all of a
--     person's sessions and group roles are re-read from the provider.
--
-- This migration runs as the owner of the schema (console migrate, with
-- MIGRATE_DATABASE_URL). It creates the NOLOGIN group role
-- quarantine_runtime when it does not exist yet; the login role the console
-- uses is made a member of it by the operator:
--
--   CREATE ROLE quarantine_app LOGIN PASSWORD '...' IN ROLE quarantine_runtime;

DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'quarantine_runtime') THEN
        CREATE ROLE quarantine_runtime NOLOGIN;
    END IF;
EXCEPTION WHEN insufficient_privilege THEN
    RAISE EXCEPTION 'the role running migrations may not create roles'
        USING HINT = 'As an administrator, run CREATE ROLE quarantine_runtime NOLOGIN once, then migrate again.';
END $$;

-- Audit checkpoints: the head of the chain (seq, hash) at a moment, signed
-- with the console's Ed25519 key. Append-only like audit_log itself.
CREATE TABLE audit_checkpoints (
    seq        bigint      PRIMARY KEY,
    hash       bytea       NOT NULL,
    at         timestamptz NOT NULL,
    reason     text        NOT NULL,
    key_id     text        NOT NULL,
    public_key bytea       NOT NULL,
    signature  bytea       NOT NULL,
    CONSTRAINT audit_checkpoints_seq_check CHECK (seq >= 1),
    CONSTRAINT audit_checkpoints_hash_check CHECK (octet_length(hash) = 32),
    CONSTRAINT audit_checkpoints_reason_check CHECK (reason <> '' AND octet_length(reason) <= 64),
    CONSTRAINT audit_checkpoints_key_check CHECK (octet_length(public_key) = 32 AND key_id <> '' AND octet_length(key_id) <= 64),
    CONSTRAINT audit_checkpoints_signature_check CHECK (octet_length(signature) = 64)
);
COMMENT ON TABLE audit_checkpoints IS 'Signed heads of the audit chain: every N entries or T minutes, before exports and on demand. `console audit verify` checks each signature against a public key kept outside the database and each hash against the chain.';
COMMENT ON COLUMN audit_checkpoints.seq IS 'seq of the audit_log entry that was the head; one checkpoint per seq (replicas racing to sign the same head record it once).';
COMMENT ON COLUMN audit_checkpoints.hash IS 'hash of that entry when the checkpoint was signed.';
COMMENT ON COLUMN audit_checkpoints.key_id IS 'First 16 hex digits of the SHA-256 of the public key: which key signed.';
COMMENT ON COLUMN audit_checkpoints.public_key IS 'The signing public key, for reading only: verification uses keys given to it, never this column.';
COMMENT ON COLUMN audit_checkpoints.signature IS 'Ed25519 signature over the canonical encoding of seq, hash, at, reason and key_id (package audit, checkpoint.go).';
CREATE TRIGGER audit_checkpoints_no_update_delete BEFORE UPDATE OR DELETE ON audit_checkpoints
    FOR EACH ROW EXECUTE FUNCTION audit_log_reject_change();
CREATE TRIGGER audit_checkpoints_no_truncate BEFORE TRUNCATE ON audit_checkpoints
    FOR EACH STATEMENT EXECUTE FUNCTION audit_log_reject_change();
ALTER TABLE audit_checkpoints ENABLE ALWAYS TRIGGER audit_checkpoints_no_update_delete;
ALTER TABLE audit_checkpoints ENABLE ALWAYS TRIGGER audit_checkpoints_no_truncate;

-- Whether the identity provider said the actor's email is verified. NULL on
-- entries written before this column existed; those entries are hashed with
-- the v1 encoding, later ones with v2, which covers this column too.
ALTER TABLE audit_log ADD COLUMN actor_email_verified boolean;
COMMENT ON COLUMN audit_log.actor_email_verified IS 'true when the provider said actor_email is verified; the actor filter matches only verified emails. NULL: written before this was recorded (hash encoding v1).';

-- Every text field a client or a producer can influence has a bound; the
-- audit package cuts longer values (marking the cut) before it hashes them.
-- NOT VALID: entries written before are kept as they are (and still verify).
ALTER TABLE audit_log ADD CONSTRAINT audit_log_field_bounds_check CHECK (
    octet_length(actor_issuer) <= 512 AND octet_length(actor_subject) <= 512 AND
    octet_length(actor_email) <= 320 AND octet_length(tenant) <= 256 AND
    octet_length(action) <= 128 AND octet_length(object_type) <= 64 AND
    octet_length(object_id) <= 512 AND octet_length(message_id) <= 512 AND
    octet_length(operation_id) <= 512 AND octet_length(request_id) <= 64 AND
    octet_length(reason) <= 4096 AND octet_length(remote_addr) <= 64 AND
    octet_length(user_agent) <= 512 AND
    (before IS NULL OR octet_length(before::text) <= 65536) AND
    (after IS NULL OR octet_length(after::text) <= 65536)
) NOT VALID;

-- "Requested by" and approvers as shown to people: whether their email was
-- verified. Existing rows take what the directory knows.
ALTER TABLE replay_requests ADD COLUMN requester_email_verified boolean NOT NULL DEFAULT false;
ALTER TABLE replay_approvals ADD COLUMN approver_email_verified boolean NOT NULL DEFAULT false;
UPDATE replay_requests r SET requester_email_verified = d.email_verified
FROM user_directory d
WHERE d.issuer = r.requester_issuer AND d.subject = r.requester_subject AND d.email = r.requester_email;
UPDATE replay_approvals a SET approver_email_verified = d.email_verified
FROM user_directory d
WHERE d.issuer = a.approver_issuer AND d.subject = a.approver_subject AND d.email = a.approver_email;

-- Sign-in sessions as the console knows them. The browser's session (table
-- sessions) holds only the id of a row here; the row holds who signed in,
-- the groups last read from the provider and the refresh token to read them
-- again. Every request checks that the row is not ended.
CREATE TABLE user_sessions (
    id               text        PRIMARY KEY,
    issuer           text        NOT NULL,
    subject          text        NOT NULL,
    identity         jsonb       NOT NULL,
    refresh_token    text,
    created_at       timestamptz NOT NULL DEFAULT now(),
    refreshed_at     timestamptz NOT NULL DEFAULT now(),
    refreshing_until timestamptz,
    expires_at       timestamptz NOT NULL,
    ended_at         timestamptz,
    ended_reason     text        NOT NULL DEFAULT '',
    CONSTRAINT user_sessions_ended_check CHECK ((ended_at IS NULL) = (ended_reason = ''))
);
CREATE INDEX user_sessions_person_idx ON user_sessions (issuer, subject) WHERE ended_at IS NULL;
CREATE INDEX user_sessions_expires_idx ON user_sessions (expires_at);
COMMENT ON TABLE user_sessions IS 'One row per sign-in. Ended (never deleted before expiry) by sign-out, an admin revoking the person''s sessions, or the provider refusing to refresh; rows past expires_at are removed.';
COMMENT ON COLUMN user_sessions.identity IS 'The person as the provider last described them (issuer, subject, email, email_verified, name, groups).';
COMMENT ON COLUMN user_sessions.refresh_token IS 'OAuth refresh token used to re-read groups every SESSION_REFRESH_INTERVAL; NULL when the provider gave none (the session then ends at that interval).';
COMMENT ON COLUMN user_sessions.refreshing_until IS 'Set while one request refreshes, so concurrent requests do not spend the same refresh token twice.';

-- Who may end other people's sessions (docs/access.md).
INSERT INTO casbin_rule (ptype, v0, v1, v2, v3) VALUES ('p', 'admin', '*', 'sessions', 'revoke');

-- What the runtime role may do. No table is owned by it and it may create
-- nothing, so it cannot drop or disable a trigger. On the audit tables it
-- may only read and append.
REVOKE CREATE ON SCHEMA public FROM PUBLIC;
GRANT USAGE ON SCHEMA public TO quarantine_runtime;
GRANT SELECT ON schema_version TO quarantine_runtime;
GRANT SELECT ON casbin_rule TO quarantine_runtime;
GRANT SELECT, INSERT ON audit_log, audit_checkpoints TO quarantine_runtime;
GRANT SELECT, INSERT, UPDATE, DELETE ON
    dead_letters, dead_letter_counts, dead_letter_arrivals, dead_letter_arrivals_minute, dead_letter_groups,
    sessions, role_bindings, user_sessions, user_directory,
    replay_requests, replay_items, replay_approvals, replay_jobs, replay_ledger
    TO quarantine_runtime;
GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA public TO quarantine_runtime;
-- Tables and sequences later migrations create get the same as the tables
-- above; a table that must be append-only revokes UPDATE and DELETE itself
-- (TestRuntimeRolePrivileges lists what every table grants).
ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO quarantine_runtime;
ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT USAGE, SELECT ON SEQUENCES TO quarantine_runtime;
