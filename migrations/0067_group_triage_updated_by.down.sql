ALTER TABLE group_triage DROP CONSTRAINT group_triage_bounds_check,
    ADD CONSTRAINT group_triage_bounds_check CHECK (
        octet_length(fingerprint) <= 64 AND octet_length(owner) <= 320 AND octet_length(note) <= 2000 AND
        octet_length(ticket_url) <= 2000 AND octet_length(updated_by) <= 320);
