COMMENT ON COLUMN user_directory.revoked_at IS NULL;
COMMENT ON TABLE user_directory IS 'Updated at every sign-in; group roles are as of the last sign-in.';
ALTER TABLE user_directory
    DROP CONSTRAINT user_directory_revoked_reason_check,
    DROP CONSTRAINT user_directory_revoked_check,
    DROP COLUMN revoked_reason,
    DROP COLUMN revoked_at;
