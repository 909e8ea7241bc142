-- Operator workflow (issue 13): what on-call engineers record about an
-- error group in a tenant (owner, note, ticket link, snooze), the triage
-- permission that lets them, and each person's display settings.

-- One row per tenant and error group that someone triaged. An error group
-- spans tenants (its fingerprint does not name one), so what people record
-- about it is kept per tenant: nobody reads another tenant's note.
CREATE TABLE group_triage (
    tenant         text        NOT NULL,
    fingerprint    text        NOT NULL,
    owner          text        NOT NULL DEFAULT '',
    note           text        NOT NULL DEFAULT '',
    ticket_url     text        NOT NULL DEFAULT '',
    snoozed_until  timestamptz,
    snooze_base    bigint,
    snooze_grow_by bigint,
    updated_at     timestamptz NOT NULL DEFAULT now(),
    updated_by     text        NOT NULL DEFAULT '',
    PRIMARY KEY (tenant, fingerprint),
    CONSTRAINT group_triage_bounds_check CHECK (
        octet_length(fingerprint) <= 64 AND octet_length(owner) <= 320 AND octet_length(note) <= 2000 AND
        octet_length(ticket_url) <= 2000 AND octet_length(updated_by) <= 320),
    -- A growth limit needs the size it counts from; a snooze has at least
    -- one way to end.
    CONSTRAINT group_triage_snooze_check CHECK (
        (snooze_grow_by IS NULL) = (snooze_base IS NULL) AND (snooze_grow_by IS NULL OR snooze_grow_by > 0))
);
COMMENT ON TABLE group_triage IS 'What people recorded about an error group in one tenant: owner, note, ticket link, snooze. Every change is audited (group.*).';
COMMENT ON COLUMN group_triage.snoozed_until IS 'The snooze ends at this time (NULL: no time limit).';
COMMENT ON COLUMN group_triage.snooze_base IS 'Dead letters of the group stored in this tenant (sum of dead_letter_groups.n) when it was snoozed.';
COMMENT ON COLUMN group_triage.snooze_grow_by IS 'The snooze ends once the group holds this many more than snooze_base (NULL: no growth limit).';

-- Snoozing, assigning and noting a group is on-call work.
INSERT INTO casbin_rule (ptype, v0, v1, v2, v3) VALUES ('p', 'oncall', '*', 'deadletter', 'triage');

-- A person's display settings, by identity.
CREATE TABLE user_settings (
    issuer     text        NOT NULL,
    subject    text        NOT NULL,
    time_zone  text        NOT NULL DEFAULT 'utc',
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (issuer, subject),
    CONSTRAINT user_settings_time_zone_check CHECK (time_zone IN ('utc', 'local')),
    CONSTRAINT user_settings_bounds_check CHECK (octet_length(issuer) <= 2048 AND octet_length(subject) <= 1024)
);
COMMENT ON COLUMN user_settings.time_zone IS 'How pages show times: utc, or local (the browser''s zone, UTC on hover).';
