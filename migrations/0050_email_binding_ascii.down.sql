COMMENT ON COLUMN role_bindings.unmatched_since IS NULL;
ALTER TABLE role_bindings
    DROP CONSTRAINT role_bindings_email_key_check,
    DROP COLUMN unmatched_since;
