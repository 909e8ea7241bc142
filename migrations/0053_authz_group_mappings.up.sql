-- The group-role mapping (AUTHZ_GROUP_PREFIX, AUTHZ_GROUP_ROLES) lives in
-- each process's settings, not in the database: a replica or worker rolled
-- with another one grants other roles until it is restarted, and nothing
-- told anyone but its start-up log line. Each running serve and worker
-- process now keeps the fingerprint of its mapping here, seen again every
-- minute (authz.MappingWatch), and says, when another fingerprint has been
-- seen lately, that running processes grant by different mappings: a WARN
-- at start and the gauge quarantine_authz_group_mappings_other.
CREATE TABLE authz_group_mappings (
    fingerprint text        PRIMARY KEY CHECK (fingerprint ~ '^[0-9a-f]{64}$'),
    first_seen  timestamptz NOT NULL DEFAULT now(),
    last_seen   timestamptz NOT NULL DEFAULT now(),
    seen_by     text        NOT NULL DEFAULT '' CHECK (octet_length(seen_by) <= 300)
);
COMMENT ON TABLE authz_group_mappings IS 'Group-role mappings (AUTHZ_GROUP_PREFIX, AUTHZ_GROUP_ROLES) that console processes grant by, one row per mapping (authz.GroupMap.Fingerprint), kept fresh by every process that runs with it (authz.MappingWatch): two fingerprints seen within minutes of each other mean processes grant different roles to the same groups.';
COMMENT ON COLUMN authz_group_mappings.last_seen IS 'When a process running with this mapping last said so (every minute while it runs); a mapping not seen for a few minutes is no running process''s.';
COMMENT ON COLUMN authz_group_mappings.seen_by IS 'Which process last said so: its kind (serve, worker) and host name, as it gave them; for the WARN line only.';

-- The runtime role records and refreshes its own mapping's row; it never
-- removes one (a row is a few bytes per mapping ever run).
GRANT SELECT, INSERT, UPDATE ON authz_group_mappings TO quarantine_runtime;
REVOKE DELETE, TRUNCATE ON authz_group_mappings FROM quarantine_runtime;
