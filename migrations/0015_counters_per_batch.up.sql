-- Counters that stay compact under constant ingest (docs/architecture.md,
-- "Counters").
--
-- The depth counters, the arrival counters and the error groups were kept by
-- statement triggers on dead_letters: every statement copied its rows
-- (payloads included) into transition tables, and every ingest batch
-- updated the same few hot counter rows on full pages, so each update left
-- a dead tuple and a new index entry elsewhere; VACUUM marked the space free
-- but never gave it back, and pages read them by sequential scan.
--
-- From here the console keeps them (dlq/counters.go):
--
--   * the ingest statement appends, in the same statement, one delta row
--     per touched combination (tenant, item type, class, status, error
--     group, minute) to dead_letter_deltas, which is insert-only: two
--     ingest writers never wait for each other or update the same row;
--   * one folder at a time (an advisory lock; every console runs one)
--     moves the deltas into the counters about twice a second, in one
--     transaction, so each counter row is updated at most that often and
--     by one backend: the update is HOT and the version it replaces is
--     pruned on the page. Measured with two writers updating the counters
--     in each batch instead, the tables grew from 2 to 10-70 pages in 200
--     batches (a concurrent snapshot keeps the old versions; the page
--     fills; the next update leaves the page);
--   * a status change or a retention run updates the counters itself, in
--     its own statement (those are far fewer).
--
-- The tables are rebuilt below, exact and compact, with free room on every
-- page for HOT updates and autovacuum that starts after a fixed number of
-- dead tuples instead of a share of a small table.

DROP TRIGGER dead_letter_counts_insert ON dead_letters;
DROP TRIGGER dead_letter_counts_update ON dead_letters;
DROP TRIGGER dead_letter_counts_delete ON dead_letters;
DROP TRIGGER dead_letter_triage_insert ON dead_letters;
DROP TRIGGER dead_letter_triage_update ON dead_letters;
DROP TRIGGER dead_letter_triage_delete ON dead_letters;
DROP FUNCTION dead_letter_counts_apply();
DROP FUNCTION dead_letter_triage_apply();

-- The newest dead letter of a group is looked up by its key (id and time):
-- a table partitioned by time finds it in one partition.
ALTER TABLE dead_letter_groups ADD COLUMN sample_at timestamptz;
COMMENT ON COLUMN dead_letter_groups.sample_at IS 'dead_lettered_at of sample_id.';
COMMENT ON TABLE dead_letter_counts IS 'Rows of dead_letters per tenant, item type, class and status; kept by the console in the statements that insert dead letters or change their status (dlq/counters.go).';
COMMENT ON TABLE dead_letter_arrivals IS 'Dead letters stored per tenant, hour of dead_lettered_at (UTC), item type and class; kept by the ingest statement. Arrivals are history: status changes and retention do not change them.';
COMMENT ON TABLE dead_letter_arrivals_minute IS 'Dead letters stored per tenant and minute of dead_lettered_at, for exact rolling "last hour" and "last 24 hours" figures; kept like dead_letter_arrivals.';
COMMENT ON TABLE dead_letter_groups IS 'Error groups (dead_letters.fingerprint) per tenant and item type; kept by the console with dead_letter_counts.';

-- Rebuilt from the dead letters: exact, and in fresh files (TRUNCATE), so
-- the space the triggers bloated is given back.
TRUNCATE dead_letter_counts, dead_letter_arrivals, dead_letter_arrivals_minute, dead_letter_groups;

-- Room for HOT updates, and vacuum after a fixed number of dead tuples
-- (set before the rows go back in, so they apply to every row). Any row of
-- the counters and groups may be updated at every fold: 70% of each page
-- stays free, room for two versions of every row besides the live one, so
-- a fold finds room on the page even while a snapshot a fold old keeps the
-- version before. Arrivals are mostly appended (a new minute, a new hour)
-- and only the newest rows are updated: half free.
ALTER TABLE dead_letter_counts SET (fillfactor = 30,
    autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 1000, autovacuum_vacuum_cost_delay = 0);
ALTER TABLE dead_letter_groups SET (fillfactor = 30,
    autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 1000, autovacuum_vacuum_cost_delay = 0);
ALTER TABLE dead_letter_arrivals_minute SET (fillfactor = 50,
    autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 1000, autovacuum_vacuum_cost_delay = 0);
ALTER TABLE dead_letter_arrivals SET (fillfactor = 50,
    autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 1000, autovacuum_vacuum_cost_delay = 0);

INSERT INTO dead_letter_counts (tenant, item_type, error_class, status, n)
SELECT tenant, item_type, error_class, status, count(*) FROM dead_letters GROUP BY 1, 2, 3, 4;

INSERT INTO dead_letter_arrivals (tenant, hour, item_type, error_class, n)
SELECT tenant, date_bin('1 hour', dead_lettered_at, TIMESTAMPTZ '2000-01-01 00:00:00+00'), item_type, error_class, count(*)
FROM dead_letters GROUP BY 1, 2, 3, 4;

INSERT INTO dead_letter_arrivals_minute (tenant, minute, n)
SELECT tenant, date_bin('1 minute', dead_lettered_at, TIMESTAMPTZ '2000-01-01 00:00:00+00'), count(*)
FROM dead_letters GROUP BY 1, 2;

INSERT INTO dead_letter_groups (tenant, fingerprint, item_type, error_class, n, unresolved, first_seen, last_seen, sample_id, sample_at)
SELECT tenant, fingerprint, item_type, min(error_class), count(*), count(*) FILTER (WHERE dead_letter_unresolved(status)),
       min(dead_lettered_at), max(dead_lettered_at), max(id), (array_agg(dead_lettered_at ORDER BY id DESC))[1]
FROM dead_letters GROUP BY 1, 2, 3;

ALTER TABLE dead_letter_groups ALTER COLUMN sample_at SET NOT NULL;

-- What ingest stored and the folder has not yet counted: one row per
-- batch and combination. The folder deletes what it folds; autovacuum
-- gives the space back to the next deltas.
CREATE TABLE dead_letter_deltas (
    tenant      text        NOT NULL,
    item_type   text        NOT NULL,
    error_class text        NOT NULL,
    status      text        NOT NULL,
    fingerprint text        NOT NULL,
    minute      timestamptz NOT NULL,
    n           bigint      NOT NULL,
    first_seen  timestamptz NOT NULL,
    last_seen   timestamptz NOT NULL,
    sample_id   bigint      NOT NULL,
    sample_at   timestamptz NOT NULL
) WITH (autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 2000, autovacuum_vacuum_cost_delay = 0,
        autovacuum_vacuum_insert_scale_factor = 0, autovacuum_vacuum_insert_threshold = 20000);
COMMENT ON TABLE dead_letter_deltas IS 'Dead letters stored by ingest and not yet counted: one row per batch, tenant, item type, class, status, error group and minute of dead_lettered_at; the folder (dlq.FoldCounters) moves them into dead_letter_counts, dead_letter_groups and the arrival counters and deletes them.';

-- Sessions: the browser's session row is written only when its data
-- changed or its idle deadline must move (authz/session_store.go), and it
-- names the sign-in it belongs to, so that one query reads both.
ALTER TABLE sessions ADD COLUMN user_session text;
COMMENT ON COLUMN sessions.user_session IS 'The user_sessions row this browser session signs in (copied from its data when committed), so that one statement reads both.';
ALTER TABLE sessions SET (fillfactor = 70,
    autovacuum_vacuum_scale_factor = 0.05, autovacuum_vacuum_threshold = 500, autovacuum_vacuum_cost_delay = 0);
ALTER TABLE user_sessions SET (fillfactor = 80);
