COMMENT ON COLUMN role_bindings.created_by IS NULL;
ALTER TABLE role_bindings
    DROP CONSTRAINT role_bindings_author_check,
    DROP COLUMN created_by_email_verified,
    DROP COLUMN created_by_subject,
    DROP COLUMN created_by_issuer;
