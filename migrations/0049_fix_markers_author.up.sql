-- Whether the author of a fix marker had a verified email: created_by_email
-- held the email claim, verified or not, so the dead letter's page showed a
-- claimed address as if it were verified. (Their issuer and subject are
-- recorded since 0010; an author without email is named by the subject.)
-- A marker now records whether the provider verified the email kept in
-- created_by_email; the page names the author as every page names a person
-- (quarantine.Actor.Display: "(unverified)" marked, else the subject).
-- Markers from before keep created_by_email alone, shown as they were:
-- nothing recorded whether their address was verified. Markers stay
-- append-only: no row is rewritten here.
ALTER TABLE fix_markers
    ADD COLUMN created_by_email_verified boolean,
    -- A verified flag without an address verifies nothing: an author
    -- without email is recorded unverified (or, before 0049, unknown).
    ADD CONSTRAINT fix_markers_author_check CHECK (created_by_email <> '' OR created_by_email_verified IS NOT TRUE);
COMMENT ON COLUMN fix_markers.created_by_email IS 'The email claim of who recorded the fix ('''' when they had none), verified or not (created_by_email_verified).';
COMMENT ON COLUMN fix_markers.created_by_email_verified IS 'Whether the provider verified created_by_email when the fix was recorded; NULL for markers from before migration 0049.';
