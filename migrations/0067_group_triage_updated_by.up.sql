-- Who last changed an error group is stored as every stored text names a
-- person (quarantine.Actor.Attribution): an unverified address is
-- "<address> (unverified)", 333 bytes for the longest address a sign-in
-- takes (320, authz.maxEmail), past the 320 this column held, so every save
-- of such a person's group panel failed
-- (TestRevTriage31LongestAddressSavesAGroup). 512 holds any identity a
-- sign-in takes (a subject is at most 255 bytes).
ALTER TABLE group_triage DROP CONSTRAINT group_triage_bounds_check,
    ADD CONSTRAINT group_triage_bounds_check CHECK (
        octet_length(fingerprint) <= 64 AND octet_length(owner) <= 320 AND octet_length(note) <= 2000 AND
        octet_length(ticket_url) <= 2000 AND octet_length(updated_by) <= 512);
