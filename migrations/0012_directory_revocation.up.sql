-- Execution-time rights (docs/access.md, "Rights when nobody is signed
-- in"): a replay worker re-checks a request's requester and approvers from
-- user_directory. An admin ending a person's sessions, or the identity
-- provider refusing to refresh one, now marks the person's entry revoked
-- (groups cleared) in the same transaction; the next sign-in clears the
-- mark. A revoked entry holds no right at all; an entry not seen for longer
-- than a session lives holds none from the provider (groups, email).
ALTER TABLE user_directory
    ADD COLUMN revoked_at timestamptz,
    ADD COLUMN revoked_reason text NOT NULL DEFAULT '',
    ADD CONSTRAINT user_directory_revoked_check CHECK ((revoked_at IS NULL) = (revoked_reason = '')),
    ADD CONSTRAINT user_directory_revoked_reason_check CHECK (octet_length(revoked_reason) <= 500);
COMMENT ON TABLE user_directory IS 'The identity and groups each person last signed in or refreshed with (seen_at), for checks made when nobody is signed in. Groups older than a session lifetime give nothing; a revoked entry gives nothing until the next sign-in.';
COMMENT ON COLUMN user_directory.revoked_at IS 'When an admin ended the person''s sessions or the provider refused to refresh one; NULL since their last sign-in otherwise.';
