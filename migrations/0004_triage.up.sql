-- Triage console: indexes for the quarantine list, trigram search on errors,
-- hourly/minutely arrival counters and error-group summaries, all kept by
-- statement triggers so the dashboard and the groups page never count(*)
-- dead_letters.
--
-- pg_trgm ships with PostgreSQL (contrib). CREATE EXTENSION needs a role that
-- may create it: a superuser, or (PostgreSQL 13+) the database owner, since
-- pg_trgm is a trusted extension. On a managed server where the console's
-- role cannot, create it once as an administrator before migrating:
--     CREATE EXTENSION IF NOT EXISTS pg_trgm;
CREATE EXTENSION IF NOT EXISTS pg_trgm;

-- ---------------------------------------------------------------------------
-- Indexes of the quarantine list. Every list query is "newest first, keyset
-- (dead_lettered_at, id)", run once per partition (a tenant of the caller's
-- scope, or one tenant/item type/class/status combination) and merged: see
-- dlq/query.go. Each index below ends in (dead_lettered_at, id) so a
-- partition is one backward index range scan that stops after a page.
-- Kept to seven because every index costs ingest time (make bench-ingest).
-- ---------------------------------------------------------------------------

-- The list of a tenant, a time range, and the fallback of every filter.
CREATE INDEX dead_letters_tenant_time_idx ON dead_letters (tenant, dead_lettered_at, id);

-- Narrow item type / error class / status filters: one probe per matching
-- combination (the combinations come from dead_letter_counts). Holds every
-- column the probe reads, so it is an index-only scan on vacuumed pages.
CREATE INDEX dead_letters_dims_time_idx ON dead_letters (tenant, item_type, error_class, status, dead_lettered_at, id);

-- One error group's dead letters, newest first.
CREATE INDEX dead_letters_group_time_idx ON dead_letters (tenant, fingerprint, dead_lettered_at, id);

-- Exact lookups by the identities people paste from logs.
CREATE INDEX dead_letters_msg_id_idx ON dead_letters (msg_id);
CREATE INDEX dead_letters_operation_id_idx ON dead_letters (operation_id) WHERE operation_id <> '';
CREATE INDEX dead_letters_correlation_id_idx ON dead_letters (correlation_id) WHERE correlation_id <> '';

-- Text search in error messages (ILIKE '%words%'). Only the first 1,024
-- characters are indexed and searched, so that a producer sending huge error
-- texts cannot blow up the index; queries must use the same expression.
CREATE INDEX dead_letters_error_trgm_idx ON dead_letters USING gin ((left(error, 1024)) gin_trgm_ops);

-- Index-only scans need the visibility map: vacuum after 1% new rows (the
-- default, 20%, leaves the newest pages, which the list reads most, unvacuumed
-- for millions of rows).
ALTER TABLE dead_letters SET (autovacuum_vacuum_insert_scale_factor = 0.01, autovacuum_vacuum_insert_threshold = 10000);

-- ---------------------------------------------------------------------------
-- Summaries kept by statement triggers.
-- ---------------------------------------------------------------------------

CREATE FUNCTION dead_letter_unresolved(status text) RETURNS boolean
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN status IN ('quarantined', 'replay_requested', 'replaying', 'replay_failed');
COMMENT ON FUNCTION dead_letter_unresolved(text) IS 'Statuses that count towards depth and age (the same list as dead_letters_unresolved_age_idx).';

CREATE TABLE dead_letter_arrivals (
    tenant      text        NOT NULL,
    hour        timestamptz NOT NULL,
    item_type   text        NOT NULL,
    error_class text        NOT NULL,
    n           bigint      NOT NULL,
    PRIMARY KEY (tenant, hour, item_type, error_class)
);
COMMENT ON TABLE dead_letter_arrivals IS 'Dead letters stored per tenant, hour of dead_lettered_at (UTC), item type and class; kept by statement triggers on dead_letters. Arrivals are history: updates and deletes of dead letters do not change them.';
COMMENT ON COLUMN dead_letter_arrivals.hour IS 'Start of the UTC hour: date_bin(1 hour, dead_lettered_at, 2000-01-01 UTC).';

CREATE TABLE dead_letter_arrivals_minute (
    tenant text        NOT NULL,
    minute timestamptz NOT NULL,
    n      bigint      NOT NULL,
    PRIMARY KEY (tenant, minute)
);
COMMENT ON TABLE dead_letter_arrivals_minute IS 'Dead letters stored per tenant and minute of dead_lettered_at, for exact rolling "last hour" and "last 24 hours" figures; kept like dead_letter_arrivals (1,440 rows per tenant and day).';

CREATE TABLE dead_letter_groups (
    tenant      text        NOT NULL,
    fingerprint text        NOT NULL,
    item_type   text        NOT NULL,
    error_class text        NOT NULL,
    n           bigint      NOT NULL,
    unresolved  bigint      NOT NULL,
    first_seen  timestamptz NOT NULL,
    last_seen   timestamptz NOT NULL,
    sample_id   bigint      NOT NULL,
    PRIMARY KEY (tenant, fingerprint, item_type)
);
COMMENT ON TABLE dead_letter_groups IS 'Error groups (dead_letters.fingerprint) per tenant and item type; kept by statement triggers on dead_letters.';
COMMENT ON COLUMN dead_letter_groups.n IS 'Dead letters of the group now stored (deletes subtract).';
COMMENT ON COLUMN dead_letter_groups.unresolved IS 'Of n, those whose status is unresolved (dead_letter_unresolved).';
COMMENT ON COLUMN dead_letter_groups.first_seen IS 'Earliest dead_lettered_at ever stored in the group; not moved back by deletes.';
COMMENT ON COLUMN dead_letter_groups.sample_id IS 'The newest dead letter stored in the group (highest id); it may have been deleted since.';

CREATE FUNCTION dead_letter_triage_apply() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    -- Every upsert takes its keys in one order (ORDER BY the key), and the
    -- tables in one order, so concurrent statements cannot deadlock.
    IF TG_OP = 'INSERT' THEN
        INSERT INTO dead_letter_arrivals AS a (tenant, hour, item_type, error_class, n)
        SELECT tenant, date_bin('1 hour', dead_lettered_at, TIMESTAMPTZ '2000-01-01 00:00:00+00'), item_type, error_class, count(*)
        FROM new_rows GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4
        ON CONFLICT (tenant, hour, item_type, error_class) DO UPDATE SET n = a.n + excluded.n;

        INSERT INTO dead_letter_arrivals_minute AS a (tenant, minute, n)
        SELECT tenant, date_bin('1 minute', dead_lettered_at, TIMESTAMPTZ '2000-01-01 00:00:00+00'), count(*)
        FROM new_rows GROUP BY 1, 2 ORDER BY 1, 2
        ON CONFLICT (tenant, minute) DO UPDATE SET n = a.n + excluded.n;

        INSERT INTO dead_letter_groups AS g (tenant, fingerprint, item_type, error_class, n, unresolved, first_seen, last_seen, sample_id)
        SELECT tenant, fingerprint, item_type, min(error_class), count(*),
               count(*) FILTER (WHERE dead_letter_unresolved(status)),
               min(dead_lettered_at), max(dead_lettered_at), max(id)
        FROM new_rows GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
        ON CONFLICT (tenant, fingerprint, item_type) DO UPDATE SET
            n = g.n + excluded.n,
            unresolved = g.unresolved + excluded.unresolved,
            first_seen = least(g.first_seen, excluded.first_seen),
            last_seen = greatest(g.last_seen, excluded.last_seen),
            sample_id = greatest(g.sample_id, excluded.sample_id);
    ELSIF TG_OP = 'UPDATE' THEN
        -- Status changes move rows between resolved and unresolved; a change of
        -- the group key (never done by the console) moves them between groups.
        INSERT INTO dead_letter_groups AS g (tenant, fingerprint, item_type, error_class, n, unresolved, first_seen, last_seen, sample_id)
        SELECT tenant, fingerprint, item_type, min(error_class), sum(dn), sum(du), min(at), max(at), max(id)
        FROM (
            SELECT tenant, fingerprint, item_type, error_class, -1 AS dn,
                   -(dead_letter_unresolved(status)::int) AS du, dead_lettered_at AS at, id
            FROM old_rows
            UNION ALL
            SELECT tenant, fingerprint, item_type, error_class, 1,
                   dead_letter_unresolved(status)::int, dead_lettered_at, id
            FROM new_rows
        ) moved
        GROUP BY 1, 2, 3 HAVING sum(dn) <> 0 OR sum(du) <> 0 ORDER BY 1, 2, 3
        ON CONFLICT (tenant, fingerprint, item_type) DO UPDATE SET
            n = g.n + excluded.n,
            unresolved = g.unresolved + excluded.unresolved;
    ELSE
        INSERT INTO dead_letter_groups AS g (tenant, fingerprint, item_type, error_class, n, unresolved, first_seen, last_seen, sample_id)
        SELECT tenant, fingerprint, item_type, min(error_class), -count(*),
               -count(*) FILTER (WHERE dead_letter_unresolved(status)),
               min(dead_lettered_at), max(dead_lettered_at), max(id)
        FROM old_rows GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
        ON CONFLICT (tenant, fingerprint, item_type) DO UPDATE SET
            n = g.n + excluded.n,
            unresolved = g.unresolved + excluded.unresolved;
    END IF;
    RETURN NULL;
END $$;

CREATE TRIGGER dead_letter_triage_insert AFTER INSERT ON dead_letters
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION dead_letter_triage_apply();
CREATE TRIGGER dead_letter_triage_update AFTER UPDATE ON dead_letters
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION dead_letter_triage_apply();
CREATE TRIGGER dead_letter_triage_delete AFTER DELETE ON dead_letters
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION dead_letter_triage_apply();

-- Summaries of the rows stored before this migration.
INSERT INTO dead_letter_arrivals (tenant, hour, item_type, error_class, n)
SELECT tenant, date_bin('1 hour', dead_lettered_at, TIMESTAMPTZ '2000-01-01 00:00:00+00'), item_type, error_class, count(*)
FROM dead_letters GROUP BY 1, 2, 3, 4;
INSERT INTO dead_letter_arrivals_minute (tenant, minute, n)
SELECT tenant, date_bin('1 minute', dead_lettered_at, TIMESTAMPTZ '2000-01-01 00:00:00+00'), count(*)
FROM dead_letters GROUP BY 1, 2;
INSERT INTO dead_letter_groups (tenant, fingerprint, item_type, error_class, n, unresolved, first_seen, last_seen, sample_id)
SELECT tenant, fingerprint, item_type, min(error_class), count(*), count(*) FILTER (WHERE dead_letter_unresolved(status)),
       min(dead_lettered_at), max(dead_lettered_at), max(id)
FROM dead_letters GROUP BY 1, 2, 3;
