-- Email role bindings were keyed "email:" + Go's strings.ToLower(address),
-- on both sides: the binding an admin added and the verified email claim of
-- whoever signs in. Unicode lower-casing merges mailboxes: İ (U+0130)
-- becomes i and the Kelvin sign K (U+212A) k, so a verified address at
-- kİwİ.example (xn--kiwi-rwcc.example, another domain) held the roles bound
-- to ops@kiwi.example. Both sides now use one key
-- (replaypolicy.EmailKey): ASCII letters lower-cased, nothing else; an
-- address that is not all ASCII has no key, cannot be bound by email (bind
-- the identity, issuer|subject) and never matches one.
--
-- A stored binding whose address is not ASCII was keyed by ToLower from an
-- address nobody kept (the audit row holds the same key), so it cannot be
-- re-keyed: it is flagged, loaded for nobody, and shown on the bindings
-- page for an admin to remove and replace by an identity binding. (An
-- address whose only non-ASCII letters were İ or K was stored as the ASCII
-- address they lower to, indistinguishable here from one typed so: see
-- docs/access.md.) Rows are not deleted here: a removal is an admin's,
-- audited. New rows must hold a key: a non-ASCII address or an ASCII
-- capital is refused by the constraint as by the form.
ALTER TABLE role_bindings
    ADD COLUMN unmatched_since timestamptz,
    ADD CONSTRAINT role_bindings_email_key_check CHECK (
        subject NOT LIKE 'email:%'
        OR unmatched_since IS NOT NULL
        OR (octet_length(subject) = char_length(subject)
            AND subject = translate(subject, 'ABCDEFGHIJKLMNOPQRSTUVWXYZ', 'abcdefghijklmnopqrstuvwxyz')))
    NOT VALID;
UPDATE role_bindings SET unmatched_since = now()
    WHERE subject LIKE 'email:%' AND octet_length(subject) <> char_length(subject);
ALTER TABLE role_bindings VALIDATE CONSTRAINT role_bindings_email_key_check;
COMMENT ON COLUMN role_bindings.unmatched_since IS 'When the console stopped matching this binding (migration 0050: an email binding whose address is not ASCII, keyed by Unicode lower-casing, which merges mailboxes); NULL for a binding in force.';
