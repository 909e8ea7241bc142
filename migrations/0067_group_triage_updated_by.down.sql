-- Names past 320 bytes, which 0067 let in, are cut first (80 characters
-- are at most 320 bytes of UTF-8).
UPDATE group_triage SET updated_by = left(updated_by, 80) WHERE octet_length(updated_by) > 320;
ALTER TABLE group_triage DROP CONSTRAINT group_triage_bounds_check,
    ADD CONSTRAINT group_triage_bounds_check CHECK (
        octet_length(fingerprint) <= 64 AND octet_length(owner) <= 320 AND octet_length(note) <= 2000 AND
        octet_length(ticket_url) <= 2000 AND octet_length(updated_by) <= 320);
