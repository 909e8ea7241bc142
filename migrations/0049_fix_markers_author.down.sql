COMMENT ON COLUMN fix_markers.created_by_email IS NULL;
ALTER TABLE fix_markers
    DROP CONSTRAINT fix_markers_author_check,
    DROP COLUMN created_by_email_verified;
