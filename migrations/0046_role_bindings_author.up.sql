-- Who added a role binding: created_by held only the author's email claim,
-- verified or not, and nothing for an author whose provider sends none, so
-- the bindings page showed a claimed address as if it were verified and an
-- author without email as nobody. A binding now records the author's
-- identity (issuer, subject) and whether their provider verified the email
-- kept in created_by; the page names them as every page names a person
-- (quarantine.Actor.Display: "(unverified)" marked, else the subject).
-- Rows from before keep created_by alone, shown as they were: nothing
-- recorded whether their address was verified.
ALTER TABLE role_bindings
    ADD COLUMN created_by_issuer text,
    ADD COLUMN created_by_subject text,
    ADD COLUMN created_by_email_verified boolean,
    -- An author is recorded whole or not at all (rows from before 0046).
    ADD CONSTRAINT role_bindings_author_check CHECK (
        (created_by_issuer IS NULL) = (created_by_subject IS NULL)
        AND (created_by_issuer IS NULL) = (created_by_email_verified IS NULL));
COMMENT ON COLUMN role_bindings.created_by IS 'The email claim of who added the binding ('''' when they had none), verified or not (created_by_email_verified).';
COMMENT ON COLUMN role_bindings.created_by_issuer IS 'Issuer of who added the binding; NULL for bindings from before migration 0046 (created_by alone, its verification unknown).';
COMMENT ON COLUMN role_bindings.created_by_subject IS 'Subject of who added the binding; NULL for bindings from before migration 0046.';
COMMENT ON COLUMN role_bindings.created_by_email_verified IS 'Whether the provider verified created_by when the binding was added; NULL for bindings from before migration 0046.';
